"""Every chart value is documented, and the chart README's table is the one values.yaml gives."""

from __future__ import annotations

from tests.charts.values_table import CHART, documented, readme_table, table, undocumented

VALUES = (CHART / "values.yaml").read_text()


def test_every_value_has_a_description() -> None:
    assert undocumented(VALUES) == []
    assert all(row.description for row in documented(VALUES))


def test_the_readme_table_matches_values_yaml() -> None:
    readme = (CHART / "README.md").read_text()
    assert readme_table(readme) == table(VALUES), "regenerate it: python -m tests.charts.values_table"


def test_an_undocumented_value_is_caught() -> None:
    assert undocumented(VALUES + "extra:\n  knob: 1\n") == ["extra.knob"]
