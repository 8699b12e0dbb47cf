"""The order `make test` hands files to its workers in (project_tests/conftest.py: the schedule)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from project_tests.conftest import in_schedule_order


def _item(path: str, *marks: str):
    return SimpleNamespace(path=Path(path), name=f"{path}-{len(marks)}",
                           get_closest_marker=lambda name: name if name in marks else None)


def test_alone_files_first_then_in_process_ones_then_the_longest_then_the_rest_each_file_whole():
    items = [_item("a/test_agreement.py", "end_to_end"), _item("a/test_hygiene.py"),
             _item("a/test_kept_mistakes.py", "end_to_end"), _item("a/test_hostile_class.py", "end_to_end", "alone"),
             _item("a/test_agreement.py", "end_to_end"), _item("a/test_check.py", "end_to_end"),
             _item("a/test_check.py"), _item("a/test_hygiene.py"), _item("a/test_hostile_class.py", "end_to_end", "alone"),
             _item("a/test_unseen_mistakes.py", "end_to_end")]
    ordered = in_schedule_order(items)
    assert [item.path.name for item in ordered] == [
        "test_hostile_class.py", "test_hostile_class.py", "test_hygiene.py", "test_hygiene.py",
        "test_kept_mistakes.py", "test_unseen_mistakes.py", "test_check.py", "test_check.py",
        "test_agreement.py", "test_agreement.py"]
    assert [item for item in ordered if item.path.name == "test_check.py"] == [items[5], items[6]]  # a file's own order
