"""Sizes as users write them in environment variables (HPCSA_CACHE_MAX, HPCSA_POOL_MIN_BYTES)."""

from __future__ import annotations

import pytest

from hpcsa.core.sizes import parse_size


@pytest.mark.parametrize(("text", "size"), [("0", 0), ("123", 123), ("1.5k", 1536), ("500M", 500 << 20),
                                            ("2GiB", 2 << 30), ("2gb", 2 << 30), (" 1T ", 1 << 40), ("0.4", 0)])
def test_sizes(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "lots", "M", "-1", "-1K", "nan", "1X"])
def test_not_sizes(text: str) -> None:
    with pytest.raises(ValueError):
        parse_size(text)
