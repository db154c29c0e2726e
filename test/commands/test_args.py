"""commands/_args.py: the files a command writes, checked before its run by one rule (file_to_write)
whose messages still say what each kind of file needs."""

import argparse

import pytest

from edge_roofline.commands._args import chart_file, existing_file, file_to_write, output_file


@pytest.mark.parametrize("parse, name, problem", [
    (output_file, "", "{dir} is a directory; give a file name in it"),
    (chart_file, "", "{dir} is a directory; give a file name in it, e.g. {dir}/chart.png"),
    (chart_file, "chart", "{dir}/chart: charts are written as .png or .svg"),
    (file_to_write(formats=(".mcap",), what="recordings"), "run.txt", "{dir}/run.txt: recordings are written as .mcap"),
    (output_file, "new/out.json", "{dir}/new/out.json: folder {dir}/new does not exist; create it first"),
])
def test_a_file_that_cannot_be_written_is_refused_with_what_it_needs(tmp_path, parse, name, problem):
    text = str(tmp_path / name) if name else str(tmp_path)
    with pytest.raises(argparse.ArgumentTypeError) as refused:
        parse(text)
    assert str(refused.value) == problem.format(dir=tmp_path)


@pytest.mark.parametrize("parse, name", [(output_file, "out.json"), (chart_file, "new/CHART.SVG"),
                                         (output_file, ""), (chart_file, "")])
def test_a_file_that_can_be_written_is_given_back_as_is(tmp_path, parse, name):
    text = str(tmp_path / name) if name else ""  # a chart's writer makes its folder; "" is none
    assert parse(text) == text


def test_a_file_to_read_is_given_back_as_checked_with_home_expanded(tmp_path, monkeypatch):
    """Before, ``~/m.cache`` passed the check (expanded) and went on as typed: the backend found no such file."""
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "m.cache").write_bytes(b"cache")
    assert existing_file("~/m.cache") == str(tmp_path / "m.cache")
    with pytest.raises(argparse.ArgumentTypeError, match=r"^~/none.cache is not a file: give the path of an "
                                                           "existing file$"):
        existing_file("~/none.cache")
