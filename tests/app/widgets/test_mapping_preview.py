"""The mapping dialog previews large logs through a few of their rows: the preview must refuse
what the whole log refuses (a repeated header name, a column the reader skipped), with the
same reason, not a generic "no column" message."""

from __future__ import annotations

import numpy as np
import pytest

from app.widgets.mapping_dialog import _sub_table
from engine.logs import LogError, LogMapping, apply_mapping, read_log


def test_a_preview_of_a_log_with_a_repeated_column_refuses_it_for_the_same_reason(tmp_path):
    rows = "\n".join(f"{0.01 * i},{0.1 * i},{-0.1 * i},{0.5}" for i in range(400))
    path = tmp_path / "twice.csv"
    path.write_text("t,theta,theta,u\n" + rows + "\n")
    table = read_log(path)
    preview = _sub_table(table, slice(0, 400, 7))

    assert preview.repeated == table.repeated == {"theta": ["theta_1", "theta_2"]}
    np.testing.assert_array_equal(preview.data["theta_2"], table.data["theta_2"][::7])
    mapping = LogMapping(time="t", q=["theta"], u=["u"])
    with pytest.raises(LogError, match="repeats column 'theta'"):
        apply_mapping(preview, mapping)
    with pytest.raises(LogError, match="repeats column 'theta'"):
        apply_mapping(table, mapping)
