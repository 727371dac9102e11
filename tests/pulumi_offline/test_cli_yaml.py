"""Stack files decoded the way the Pulumi CLI decodes them (gopkg.in/yaml.v3), within bounds.

The expectations come from yaml.v3 v3.0.1's resolve.go / decode.go and the CLI's config
package (sdk/go/common/resource/config/object.go), as pinned by pulumi/pulumi v3.276.0; the
engine tests compare the same files with the real CLI (tests/engine/test_stack_files.py).
"""

from __future__ import annotations

import math

import pytest

from pulumi_offline.cli_yaml import (
    MAX_DEPTH,
    MAX_FILE_BYTES,
    GoTime,
    YamlRefused,
    go_float,
    load,
    resolve,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("yes", "yes"),  # YAML 1.1 booleans are strings to yaml.v3 (PyYAML says True)
        ("on", "on"),
        ("No", "No"),
        ("true", True),
        ("TRUE", True),
        ("TrUe", "TrUe"),
        ("~", None),
        ("", None),
        ("0x1F", 31),
        ("0o17", 15),
        ("0b101", 5),
        ("010", 8),  # Go's base-0 rule: a leading 0 is octal
        ("09", 9.0),  # not octal, not an int: yaml.v3 falls through to a float
        ("1_000", 1000),
        ("+5", 5),
        ("-0x10", -16),
        ("1e3", 1000.0),
        (".5", 0.5),
        ("1e400", "1e400"),  # out of float64 range: a string
        ("18446744073709551615", 18446744073709551615),  # uint64
        ("-9223372036854775809", -9.223372036854776e18),  # past int64: a float
        ("12abc", "12abc"),
        ("<<", "<<"),
    ],
)
def test_plain_scalars_resolve_as_yaml_v3_resolves_them(text: str, expected: object) -> None:
    assert resolve(text)[1] == expected


def test_timestamps_reach_the_program_as_go_time_text() -> None:
    assert resolve("2026-01-03T04:00:00Z")[1] == GoTime("2026-01-03 04:00:00 +0000 UTC")
    assert resolve("2026-01-03")[1] == GoTime("2026-01-03 00:00:00 +0000 UTC")
    assert resolve("2026-1-3 4:5:6.5")[1] == GoTime("2026-01-03 04:05:06.5 +0000 UTC")
    assert resolve("2026-01-03T04:00:00+02:00")[1] == GoTime("2026-01-03 04:00:00 +0200 +0200")
    assert resolve("2026-13-03")[1] == "2026-13-03"  # not a date: a string


def test_non_finite_specials() -> None:
    assert math.isnan(resolve(".nan")[1])
    assert resolve("-.inf")[1] == -math.inf


def test_go_json_floats() -> None:
    assert [go_float(v) for v in (1.0, 0.5, 1e21, 1.5e-7, 123456.789, -2.0)] == [
        "1",
        "0.5",
        "1e+21",
        "1.5e-7",
        "123456.789",
        "-2",
    ]


def test_quoted_tagged_and_unknown_tags() -> None:
    data = load(
        b"a: '5'\nb: !!str 5\nc: !!int '7'\nd: !!float 2\ne: !custom text\n"
        b"f: !!python/object:os.system ls\ng: |\n  yes\n"
    )
    assert data == {"a": "5", "b": "5", "c": 7, "d": 2.0, "e": "text", "f": "ls", "g": "yes\n"}


def test_merge_keys_merge_and_explicit_keys_win() -> None:
    data = load(b"base: &b {x: 1, y: 2}\nother: &o {y: 3, z: 4}\nc:\n  <<: [*b, *o]\n  x: 9\n")
    assert data["c"] == {"x": 9, "y": 2, "z": 4}


def test_a_utf8_byte_order_mark_is_dropped_like_the_cli() -> None:
    assert load(b"\xef\xbb\xbfa: 1\n") == {"a": 1}


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        (b"a: 1\nb: 2\na: 3\n", 'line 3: mapping key "a" already defined at line 1'),
        (b"a: {b: 1, 'b': 2}\n", 'mapping key "b" already defined'),
        (b"x: \xff\xfe\n", "yaml: invalid leading UTF-8 octet"),
        (b"x: caf\xc3\n", "yaml: invalid trailing UTF-8 octet"),
        (b"x: caf\xc3", "yaml: incomplete UTF-8 octet sequence"),
        (b"a: &x [*x]\n", "anchor 'x' value contains itself"),
        (b"a: *nope\n", "unknown anchor 'nope' referenced"),
        (b"a: !!int abc\n", "cannot decode !!str `abc` as a !!int"),
        (b"a: !!binary '%%%'\n", "!!binary value contains invalid base64 data"),
        (b"5: x\n", "mapping key 5 is not a string"),
        (b"? [a]\n: b\n", "invalid map key"),
        (b"a:\n  <<: 5\n", "map merge requires map or sequence of maps"),
        (b"a: b\n---\nc: d\n", "a second YAML document"),
        (b"a: [1, 2\n", "is not valid YAML"),
    ],
)
def test_what_the_cli_refuses_is_refused(data: bytes, fragment: str) -> None:
    with pytest.raises(YamlRefused) as info:
        load(data)
    assert fragment in str(info.value)
    assert "\n" not in str(info.value)


def billion_laughs(levels: int = 9) -> bytes:
    lines = [b"a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for i in range(1, levels):
        refs = ", ".join([f"*a{i - 1}"] * 9).encode()
        lines.append(f"a{i}: &a{i} [".encode() + refs + b"]")
    return b"\n".join(lines) + b"\n"


def test_an_alias_bomb_is_refused_as_excessive_aliasing() -> None:
    with pytest.raises(YamlRefused, match="document contains excessive aliasing"):
        load(billion_laughs())
    # A few aliases are fine (yaml.v3 allows 99% of a small document to come from them).
    assert load(b"a: &x [1, 2]\nb: *x\nc: *x\n")["c"] == [1, 2]


@pytest.mark.parametrize(
    "data",
    [
        b"x: " + b"[" * 200_000,
        b"x: " + b"{a: " * 5_000,
        b"".join(b" " * i + b"k:\n" for i in range(300)),
        b"- " * 50_000,
    ],
    ids=["flow-lists", "flow-maps", "block-maps", "block-lists"],
)
def test_deep_nesting_is_refused_early(data: bytes) -> None:
    with pytest.raises(YamlRefused, match=f"nested more than {MAX_DEPTH} levels"):
        load(data)


def test_a_multi_megabyte_file_is_refused_before_it_is_parsed() -> None:
    big = b"config:\n  x:\n" + b"".join(b"    k%d: v\n" % i for i in range(400_000))
    assert len(big) > MAX_FILE_BYTES
    with pytest.raises(YamlRefused, match="preflight reads stack files of at most 256 KiB"):
        load(big)


def test_a_wide_map_under_the_size_limit_is_bounded_by_its_node_count() -> None:
    wide = b"x: {" + b",".join(b"k%x: 1" % i for i in range(26_000)) + b"}\n"
    assert len(wide) < MAX_FILE_BYTES
    with pytest.raises(YamlRefused, match="holds more than 50000 values"):
        load(wide)
