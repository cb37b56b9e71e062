"""What a user meets first: ``from hf_critic import Critic``, a data file saved by Excel as "CSV UTF-8"
(a byte-order mark first), and a ``--rubric`` file that is not there."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hf_critic.cli import main
from hf_critic.io import iter_rows, load_records

REPO = Path(__file__).resolve().parents[2]
BOM = b"\xef\xbb\xbf"


def test_from_hf_critic_import_critic_and_import_stays_cheap():
    """``import hf_critic`` loads neither torch nor the critic; ``from hf_critic import Critic`` gives the class."""
    code = (
        "import sys, hf_critic\n"
        "heavy = sorted({'torch', 'transformers', 'hf_critic.critic'} & set(sys.modules))\n"
        "from hf_critic import Critic\n"
        "from hf_critic.critic import Critic as Direct\n"
        "print(heavy, Critic is Direct, 'Critic' in dir(hf_critic), 'Critic' in hf_critic.__all__)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["[]", "True", "True", "True"]
    with pytest.raises(AttributeError, match="has no attribute 'Nope'"):
        __import__("hf_critic").Nope  # noqa: B018


@pytest.mark.parametrize(
    ("name", "text"),
    [
        # Excel's "CSV UTF-8": a byte-order mark, CRLF line ends, a quoted field with a comma
        ("excel.csv", 'question,response,human_score\r\nWhat is 2+2?,4,9\r\n"Capital?","Paris, France",8\r\n'),
        (
            "notepad.jsonl",
            '{"question": "What is 2+2?", "response": "4", "human_score": 9}\n'
            '{"question": "Capital?", "response": "Paris, France", "human_score": 8}\n',
        ),
        (
            "array.json",
            '[{"question": "What is 2+2?", "response": "4", "human_score": 9},'
            ' {"question": "Capital?", "response": "Paris, France", "human_score": 8}]',
        ),
    ],
)
def test_a_utf8_byte_order_mark_is_read_past(name, text, tmp_path):
    """The same rows, the same column names (no ``\\ufeffquestion``), with and without the mark, on both readers."""
    plain, marked = tmp_path / "plain" / name, tmp_path / "marked" / name
    for path, head in ((plain, b""), (marked, BOM)):
        path.parent.mkdir()
        path.write_bytes(head + text.encode("utf-8"))
    expected = [
        {"question": "What is 2+2?", "response": "4", "human_score": 9},
        {"question": "Capital?", "response": "Paris, France", "human_score": 8},
    ]
    for path in (plain, marked):
        records = load_records(path)
        assert records.column_names == ["question", "response", "human_score"]
        assert records.to_list() == expected
        assert [row for _, row in iter_rows(path)] == expected


@pytest.mark.parametrize("missing", ["missing.yaml", "a_folder"])
def test_a_missing_rubric_file_is_one_line_naming_it_with_exit_2(missing, tmp_path, capsys):
    (tmp_path / "a_folder").mkdir()
    rubric = tmp_path / missing
    out = tmp_path / "out.jsonl"
    data = REPO / "examples" / "pointwise_reference_free.jsonl"
    code = main(["grade", "--data", str(data), "--output", str(out), "--rubric", str(rubric), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert err.strip().splitlines() == [
        f"hf-critic grade: error: --rubric: cannot read the rubric file {str(rubric)!r}: "
        + ("it is a folder" if missing == "a_folder" else "no such file")
        + " (see docs/troubleshooting.md#options)"
    ]
    assert not out.exists()
