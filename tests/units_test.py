import pytest

from clientlab.units import parse_size


@pytest.mark.parametrize("text,expected", [
    (1024, 1024), ("335114", 335114), ("10MB", 10_000_000), ("1.5GB", 1_500_000_000),
    ("64KiB", 65536), ("2 GiB", 2 * 1024**3),
])
def test_sizes_in_common_units(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["ten", "10XB", "-5", True])
def test_bad_sizes_are_refused_with_the_value_named(text):
    with pytest.raises(ValueError, match="size"):
        parse_size(text)
