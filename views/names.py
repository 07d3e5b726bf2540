"""Short procedure names: C++ names without their template arguments and parameter lists.

A demangled C++ name can run to hundreds of characters, and the part that tells two names apart is often
at the end (``clover::par_ranged2d_kernel<advec_mom_kernel(...)::{lambda(int, int)#3}>(clover::Range2d,
T1)``); cut to a column's width, many names read alike. The views show the short form hatchet and
hpcviewer users know from call-graph tools -- the qualified name, with the return type, template arguments
and parameter lists dropped and lambdas written ``{lambda#N}`` (``std::vector::push_back``,
``clover::par_ranged2d_kernel``) -- and the full name on hover, on request (``--full-names``, the page's
*Full names* switch), in JSON (``full_name``) and in the glob filters and search (which match either form).

Distinct names stay distinct: :class:`ShortNames` shortens every procedure name of a database together, and
where several full names would get the same short name it keeps their template arguments, each shortened
the same way (``clover::par_ranged2d_kernel<advec_mom_kernel::{lambda#3}>``); where even that is shared
(overloads that differ only in their parameters) the full names are shown. nvcc's extended host-device
lambdas, passed in a ``__nv_hdl_wrapper_t<...>`` of several hundred characters, read ``f::{hd lambda#N}``. Names that are not C++
(``main``, ``dgemm_``, placeholders such as ``<gpu kernel>``, ``<unknown procedure> 0x40 [libm.so.6]``)
are kept as they are, and so is any name this reading cannot parse.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from contextvars import ContextVar

#: Whether the current request (a thread of ``hpcsa serve``) shows full names; the CLI sets the
#: experiment's own switch instead.
FULL_NAMES: ContextVar[bool] = ContextVar("hpcsa_full_names", default=False)

_OPEN, _CLOSE = "<([{", ">)]}"
_PAIR = dict(zip(_OPEN, _CLOSE, strict=True))
#: Symbols that may follow ``operator`` (longest first), so that ``operator<<`` is not a template.
_OPERATORS = sorted(["()", "[]", "->*", "->", "<=>", "<<=", ">>=", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||",
                     "++", "--", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<", ">", "+", "-", "*", "/",
                     "%", "^", "&", "|", "~", "!", "=", ","], key=len, reverse=True)
_LAMBDA = re.compile(r"^[\[{]lambda.*?(?:#|\(instance )(\d+)\)?[\]}]$", re.S)
_SUFFIX = re.compile(r"(\s\[[^\[\]]*\])+$")  # " [clone .constprop.0]", hpcprof's " [libm.so.6]"


class _Unparsed(ValueError):
    """The name is not read as C++ (unbalanced brackets, ...): it is shown as it is."""


def _group_end(s: str, i: int) -> int:
    """The index just past the bracket group opened at ``s[i]`` (nested groups of any kind inside)."""
    stack = [_PAIR[s[i]]]
    j = i + 1
    while j < len(s):
        ch = s[j]
        if s.startswith("operator", j) and (j == 0 or not (s[j - 1].isalnum() or s[j - 1] == "_")):
            j = _after_operator(s, j + len("operator"))
            continue
        if ch in _PAIR:
            stack.append(_PAIR[ch])
        elif ch in _CLOSE:
            if ch != stack[-1]:
                if ch == ">" and stack[-1] != ">":  # a '>' inside (...) or [...]: a comparison, not a bracket
                    j += 1
                    continue
                raise _Unparsed(s)
            stack.pop()
            if not stack:
                return j + 1
        j += 1
    raise _Unparsed(s)


def _after_operator(s: str, j: int) -> int:
    """The index just past an operator's symbol (``operator<<``, ``operator()``, ``operator new``)."""
    k = j
    while k < len(s) and s[k] == " ":
        k += 1
    for op in _OPERATORS:
        if s.startswith(op, k):
            return k + len(op)
    m = re.match(r"(new|delete)(\[\])?", s[k:])
    if m:
        return k + m.end()
    while k < len(s) and s[k] != "(":  # a conversion operator (``operator bool``): its type up to the parameters
        k = _group_end(s, k) if s[k] in "<[{" else k + 1
    return k


def _split_args(s: str) -> list[str]:
    """Top-level comma-separated parts of a template argument list's inside."""
    out, start, i = [], 0, 0
    while i < len(s):
        ch = s[i]
        if ch in _PAIR:
            i = _group_end(s, i)
            continue
        if ch == ",":
            out.append(s[start:i].strip())
            start = i + 1
        i += 1
    out.append(s[start:].strip())
    return [a for a in out if a]


_NV_WRAPPER = "__nv_hdl_wrapper_t<"
_NV_TAG = re.compile(r"__nv_dl_tag<")


def _nv_lambdas(name: str) -> str:
    """nvcc's extended ``__host__ __device__`` lambdas written as GCC writes lambdas: nvcc passes one as
    ``__nv_hdl_wrapper_t<..., __nv_dl_tag<void (*)(...), &f, N>, ...>`` (the function ``f`` it is defined in
    and its number there; CUDA C++ Programming Guide, "Extended Lambdas"), which reads here as
    ``f(...)::{hd lambda#N}`` (``hd``: the host-device wrapper, apart from the device function of the same
    lambda, which GCC names ``f(...)::{lambda(...)#N}``), so that such lambdas keep apart by the function and
    number that name them."""
    out, i = [], 0
    while (k := name.find(_NV_WRAPPER, i)) >= 0:
        end = _group_end(name, k + len(_NV_WRAPPER) - 1)
        inner = name[k + len(_NV_WRAPPER):end - 1]
        tag = _NV_TAG.search(inner)
        lam = None
        if tag:
            args = _split_args(inner[tag.end():_group_end(inner, tag.end() - 1) - 1])
            num = re.fullmatch(r"(\d+)u?l*", args[-1]) if len(args) >= 2 else None
            addr = args[-2] if len(args) >= 2 else ""
            if num and addr.startswith("&"):
                func = addr[1:].strip()
                if func.startswith("(") and func.endswith(")"):
                    func = func[1:-1]
                lam = f"{func}::{{hd lambda#{num.group(1)}}}"
        out.append(name[i:k] + (lam if lam else name[k:end]))
        i = end
    return "".join(out) + name[i:]


def _shorten(core: str, keep_templates: int) -> str:
    """One name's short form (see the module docstring); ``keep_templates`` keeps that many levels of
    template arguments, each argument shortened with one level less."""
    out: list[str] = []
    i, n = 0, len(core)
    while i < n:
        ch = core[i]
        if core.startswith("operator", i) and (i == 0 or not (core[i - 1].isalnum() or core[i - 1] == "_")):
            j = _after_operator(core, i + len("operator"))
            out.append(core[i:j])
            i = j
            continue
        if ch == "<":
            j = _group_end(core, i)
            if keep_templates:
                args = [_shorten(a, keep_templates - 1) for a in _split_args(core[i + 1:j - 1])]
                out.append("<" + ", ".join(args) + ">")
            i = j
            continue
        if ch == "(":
            j = _group_end(core, i)
            inner = core[i + 1:j - 1]
            if "".join(out).strip() == "&" and j == n:  # a template argument &(f(int)): the function's address
                return "&" + _shorten(inner, keep_templates)
            if inner == "anonymous namespace":
                out.append(core[i:j])
            elif not core.startswith("::", j):  # the parameter list: the name ends here
                return "".join(out).strip()
            i = j
            continue
        if ch in "[{":
            j = _group_end(core, i)
            m = _LAMBDA.match(core[i:j])
            out.append(f"{{lambda#{m.group(1)}}}" if m else core[i:j])
            i = j
            continue
        if ch in ">)]}":
            raise _Unparsed(core)
        if ch == " ":
            rest = core[i + 1:]
            q = re.match(r"(?:(?:const|volatile|noexcept)\b|[&*])[\s&*]*(?:(?:const|volatile)\b[\s&*]*)*", rest)
            if q or not rest:  # qualifiers: the end of the name, or of a return type (int const& f<int>(...))
                if not rest or q is None or q.end() == len(rest):
                    return "".join(out).strip()
                out = []
                i += 1 + q.end()
                continue
            if rest.startswith(("<", "(")) and re.search(r"operator\S*$", "".join(out)):  # operator<< <char>
                i += 1
                continue
            if out and not "".join(out).endswith("::"):
                out = []  # what came before was the return type
            i += 1
            continue
        out.append(ch)
        i += 1
    return "".join(out).strip()


def short_name(name: str, keep_templates: int = 0) -> str:
    """The short form of one name on its own, with ``keep_templates`` levels of template arguments
    (:class:`ShortNames` keeps a database's names distinct)."""
    if not name or name.startswith("<") or not any(c in name for c in "<(:"):
        return name
    m = _SUFFIX.search(name)
    core, suffix = (name[:m.start()], name[m.start():]) if m else (name, "")
    try:
        if _NV_WRAPPER in core:
            core = _nv_lambdas(core)
        short = _shorten(core.strip(), keep_templates)
    except (_Unparsed, IndexError):
        return name
    return (short + suffix) if short else name


class ShortNames:
    """The short names of a list of names (a database's procedures), distinct where the full names are."""

    def __init__(self, names: Sequence[str]) -> None:
        self.full = list(names)
        first = [short_name(n) for n in self.full]
        self.short = _distinct(self.full, first, lambda i, k: short_name(self.full[i], keep_templates=k))

    def __getitem__(self, i: int) -> str:
        return self.short[i]

    def __len__(self) -> int:
        return len(self.short)


def _distinct(full: list[str], short: list[str], longer: Callable[[int, int], str], levels: int = 3) -> list[str]:
    """``short`` with every name shared by different full names replaced by ``longer(i, k)`` (its form with
    ``k`` levels of template arguments, the fewest levels that tell it apart, up to ``levels``), and by the
    full name where that is still shared."""
    out = list(short)
    for k in range(1, levels + 2):
        owners: dict[str, set[str]] = {}
        for f, s in zip(full, out, strict=True):
            owners.setdefault(s, set()).add(f)
        clash = [i for i, s in enumerate(out) if len(owners[s]) > 1]
        if not clash:
            break
        for i in clash:
            out[i] = longer(i, k) if k <= levels else full[i]
    return out
