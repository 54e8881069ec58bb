"""Every name/label/value pattern against Kubernetes' rules, as properties (issue 20, defect 4).

The oracle is Kubernetes' rule written out character by character (apimachinery's
`IsQualifiedName`, `IsValidLabelValue`, `IsDNS1123Subdomain`, `IsDNS1035Label`, and
`strconv.ParseInt(s, 10, 64)`), not a regular expression: `re.match` with `$` accepted a
trailing newline and `int()` accepted " 2", "2\\n" and "2_0". The same rules are checked against
the real API server in `tests/e2e/test_validation_apiserver.py`.
"""

from __future__ import annotations

import string

from hypothesis import example, given, settings
from hypothesis import strategies as st

from controller.core import labels as L

ALNUM = frozenset(string.ascii_letters + string.digits)
LOWER_ALNUM = frozenset(string.ascii_lowercase + string.digits)
# what a fuzzer tries: the legal characters, separators, whitespace, control characters, and
# non-ASCII letters and digits that Python's str methods or `\d`/`\w` would take
ALPHABET = string.ascii_letters + string.digits + "-_./:+ \t\n\r\x00\x0b\x7f" + "é٣ßKİ１"
TEXT = st.text(alphabet=ALPHABET, max_size=70) | st.text(max_size=8)
INT64 = 2**63


def k8s_label_value(v: str) -> bool:
    return v == "" or (len(v) <= 63 and set(v) <= ALNUM | {"-", "_", "."} and v[0] in ALNUM and v[-1] in ALNUM)


def k8s_dns1123_subdomain(v: str) -> bool:
    if not 0 < len(v) <= 253:
        return False
    return all(
        part and set(part) <= LOWER_ALNUM | {"-"} and part[0] in LOWER_ALNUM and part[-1] in LOWER_ALNUM
        for part in v.split(".")
    )


def k8s_qualified_name(v: str) -> bool:
    parts = v.split("/")
    if len(parts) > 2:
        return False
    if len(parts) == 2 and not k8s_dns1123_subdomain(parts[0]):
        return False
    name = parts[-1]
    return name != "" and k8s_label_value(name)


def k8s_dns1035_label(v: str) -> bool:
    return (
        0 < len(v) <= 63 and set(v) <= LOWER_ALNUM | {"-"} and v[0] in string.ascii_lowercase and v[-1] in LOWER_ALNUM
    )


def go_parse_int(v: str) -> int | None:
    digits = v[1:] if v[:1] in ("+", "-") else v
    if not digits or not set(digits) <= set(string.digits):
        return None
    number = int(v)
    return number if -INT64 <= number < INT64 else None


@settings(max_examples=1500)
@given(TEXT)
@example("a\n")
@example("amd64\n")
@example("a" * 63)
@example("a" * 64)
def test_label_values_are_kubernetes_label_values(value: str) -> None:
    assert (L.label_value_errors(value) == []) is k8s_label_value(value)


@settings(max_examples=1500)
@given(TEXT | st.builds(lambda a, b: f"{a}/{b}", TEXT, TEXT))
@example("team\n")
@example("example.com/team\n")
@example("example.com\n/team")
@example("a" * 254 + "/b")
def test_label_keys_are_kubernetes_qualified_names(key: str) -> None:
    assert (L.qualified_name_errors(key) == []) is k8s_qualified_name(key)


@settings(max_examples=1000)
@given(TEXT)
@example("default\n")
def test_names_are_dns1035_labels(name: str) -> None:
    assert L.is_dns1035_label(name) is k8s_dns1035_label(name)


@settings(max_examples=1000)
@given(TEXT | st.integers(min_value=-(2**70), max_value=2**70).map(str))
@example("2\n")
@example(" 2")
@example("2_0")
@example("+2")
@example("٣")
@example(str(2**63))
@example(str(-(2**63)))
def test_integers_are_read_as_go_reads_them(text: str) -> None:
    assert L.parse_int(text) == go_parse_int(text)
