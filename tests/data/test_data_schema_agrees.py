"""The SML schema's ``data:`` keys and choices are exactly what the connectors accept."""

import pytest

from scellis.data.csvsource import MISSING_POLICIES
from scellis.data.record import CSV_KEYS, TEXT_KEYS, load_data
from scellis.sml.schema import DATA


def test_schema_keys_equal_connector_keys():
    assert set(DATA) == CSV_KEYS | TEXT_KEYS


def test_missing_choices_agree():
    assert set(DATA["missing"]) == set(MISSING_POLICIES)


@pytest.mark.parametrize("policy", DATA["missing"])
def test_every_missing_choice_loads(tmp_path, policy):
    f = tmp_path / "s.csv"
    # a gap in the middle: every policy but "error" fills or drops it
    rows = [f"{i},{(i * 7919) % 13 + 0.5}" if i != 9 else f"{i}," for i in range(40)]
    f.write_text("t,v\n" + "\n".join(rows) + "\n")
    data = {"source": str(f), "column": "v", "window": 4, "missing": policy}
    if policy == "error":
        with pytest.raises(Exception, match="missing"):
            load_data(data)
    else:
        ds = load_data(data)
        assert len(ds.x_train) > 0
