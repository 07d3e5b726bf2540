"""Kernel and CPU symbol names as people read them, and as HPCToolkit prints them.

Demangling uses ``cxxfilt`` (PyPI), a thin binding of libstdc++'s ``abi::__cxa_demangle``: the demangler of
``c++filt`` and of GCC itself (libiberty's cp-demangle), so names read exactly as in every other GNU tool,
and it is fast (no process per name). HPCToolkit demangles with libiberty's ``cplus_demangle`` and the
options ``DMGL_PARAMS | DMGL_ANSI | DMGL_VERBOSE | DMGL_RET_DROP``: the same text, except that the return
type which the Itanium C++ ABI mangles into template functions is not printed -- ``std::move<int&>(int&)``,
not ``std::remove_reference<int&>::type&& std::move<int&>(int&)`` -- and the standard abbreviations are
spelled out (``std::basic_string<char, std::char_traits<char>, std::allocator<char> >::_M_copy``, not
``std::string::_M_copy``). :func:`drop_return_type` removes the return type from ``__cxa_demangle``'s text. Clone suffixes (`` [clone .constprop.0]``) are kept. Names that are not
mangled, or that the demangler refuses, are returned unchanged; AMD kernel-descriptor names
(``<name>.kd``) lose the suffix first.
"""

from __future__ import annotations

import re
from functools import lru_cache

import cxxfilt

_OPEN = "(<[{"
_CLOSE = ")>]}"
# Operator names whose spelling holds bracket characters (longest first): they open or close nothing.
_BRACKET_OPERATORS = ("<<=", ">>=", "<=>", "->*", "<<", ">>", "<=", ">=", "->", "()", "[]", "<", ">")
# libiberty's standard substitutions that print differently with DMGL_VERBOSE (HPCToolkit sets it):
# ``Ss`` is ``std::basic_string<char, std::char_traits<char>, std::allocator<char> >``, not ``std::string``.
_VERBOSE = {
    "string": "std::basic_string<char, std::char_traits<char>, std::allocator<char> >",
    "istream": "std::basic_istream<char, std::char_traits<char> >",
    "ostream": "std::basic_ostream<char, std::char_traits<char> >",
    "iostream": "std::basic_iostream<char, std::char_traits<char> >",
}
_ABBREVIATED = re.compile(r"(?<![\w:])std::(string|istream|ostream|iostream)(?![\w])")
_IDENT = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$")


def demangle(name: str) -> str:
    """The readable name of a (possibly) mangled C++ symbol or kernel, as HPCToolkit prints it; unchanged
    when it is not one. A ``.kd`` suffix (AMD kernel descriptors) is dropped first."""
    return demangle_symbol(name[:-3] if name.endswith(".kd") else name)


@lru_cache(maxsize=1 << 16)
def demangle_symbol(name: str) -> str:
    """The readable name of a (possibly) mangled C++ symbol, as HPCToolkit prints it (no return type on
    template functions); unchanged when it is not one."""
    if not name.startswith("_Z"):
        return name
    try:
        return drop_return_type(_spell_out(cxxfilt.demangle(name)))
    except (cxxfilt.InvalidName, UnicodeError):  # not a valid mangling, or bytes that are not UTF-8
        return name


def _spell_out(text: str) -> str:
    """The standard abbreviations written in full, as libiberty writes them with DMGL_VERBOSE (a ``>``
    that closes a template argument list after one gets a space before it: ``hash<...<char> > >``)."""
    def full(m: re.Match[str]) -> str:
        out = _VERBOSE[m.group(1)]
        return out + " " if text.startswith(">", m.end()) else out
    return _ABBREVIATED.sub(full, text)


def _skeleton(sig: str) -> str:
    """``sig`` with the characters of operator names that are not brackets (``operator<``, ``operator()``,
    ``operator->``) and the spaces inside operator names (``operator new``, ``operator unsigned long``)
    replaced by ``#``, so that a scan for brackets and spaces at the top level sees only real ones."""
    out = list(sig)
    i = sig.find("operator")
    while i >= 0:
        j = i + len("operator")
        if (i == 0 or sig[i - 1] not in _IDENT) and (j >= len(sig) or sig[j] not in _IDENT):
            rest = sig[j:]
            op = next((t for t in _BRACKET_OPERATORS if rest.startswith(t)), None)
            if op is not None:
                # ``operator< <int>``: libiberty separates the operator from its template arguments by a space
                for k in range(j, j + len(op)):
                    out[k] = "#"
                if sig.startswith(" <", j + len(op)):
                    out[j + len(op)] = "#"
            elif rest.startswith(" "):
                # ``operator new``, ``operator delete[]``, a conversion ``operator unsigned long``: the spaces up
                # to the first bracket at its level belong to the name
                k = j
                while k < len(sig) and sig[k] not in "(<[{":
                    if sig[k] == " ":
                        out[k] = "#"
                    k += 1
        i = sig.find("operator", j)
    return "".join(out)


def drop_return_type(sig: str) -> str:
    """``void ns::f<int>(int)`` -> ``ns::f<int>(int)``: the return type in front of a template function's
    name (the only functions whose mangling carries one) is removed; other signatures are returned
    unchanged. The return type ends at the last space at bracket depth 0 before the name's parameter list,
    which must follow template arguments (``>``)."""
    sk = _skeleton(sig)
    end = len(sk)
    clone = sk.find(" [clone ")
    if clone >= 0:
        end = clone
    close = sk.rfind(")", 0, end)
    if close < 0:
        return sig
    depth = 0
    open_ = -1
    for i in range(close, -1, -1):  # the '(' of the parameter list that ends at `close`
        ch = sk[i]
        if ch in _CLOSE:
            depth += 1
        elif ch in _OPEN:
            depth -= 1
            if depth == 0:
                open_ = i
                break
    if open_ <= 0 or not sk[:open_].endswith(">"):
        return sig
    depth = 0
    cut = -1
    for i in range(open_):
        ch = sk[i]
        if ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth -= 1
        elif ch == " " and depth == 0:
            cut = i
    return sig[cut + 1:] if cut > 0 else sig
