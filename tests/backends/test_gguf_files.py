"""GGUF re-encodings for llama.cpp's fast CPU kernels: which files ``recode`` touches, what it
writes, and that it writes once. On tiny GGUF files written here; the read-out through llama.cpp on the shipped
critic is in ``tests/backends/test_llamacpp.py``."""

from __future__ import annotations

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")

from hf_critic.backends import gguf_files  # noqa: E402
from hf_critic.backends.gguf_files import file_type, parameter_count, recoded_gguf, requantize_gguf  # noqa: E402


def tiny_gguf(path, kind: str = "Q4_1"):
    """A 2-tensor llama-architecture GGUF: one 64 x 96 matrix in ``kind`` and a float32 norm, a chat template."""
    from gguf import GGMLQuantizationType, GGUFWriter, LlamaFileType
    from gguf.quants import quantize

    rng = np.random.default_rng(0)
    writer = GGUFWriter(path, arch="llama")
    writer.add_file_type(LlamaFileType[f"MOSTLY_{kind}"] if kind != "F32" else LlamaFileType.ALL_F32)
    writer.add_chat_template("{{ messages }}")
    matrix = rng.standard_normal((64, 96)).astype(np.float32)
    qtype = GGMLQuantizationType[kind]
    data = matrix if kind == "F32" else quantize(matrix, qtype)
    writer.add_tensor("blk.0.ffn_up.weight", data, raw_dtype=qtype)
    writer.add_tensor("blk.0.attn_norm.weight", np.ones(96, dtype=np.float32), raw_dtype=GGMLQuantizationType.F32)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def _weights(path) -> dict[str, tuple[str, np.ndarray]]:
    from gguf import GGUFReader
    from gguf.quants import dequantize

    return {
        t.name: (t.tensor_type.name, dequantize(t.data, t.tensor_type).astype(np.float32))
        for t in GGUFReader(path).tensors
    }


def test_requantize_keeps_metadata_and_moves_weights_by_half_a_q8_step(tmp_path):
    source = tiny_gguf(tmp_path / "m.Q4_1.gguf")
    q8 = requantize_gguf(source, tmp_path / "m.Q8_0.gguf", "Q8_0")
    f32 = requantize_gguf(source, tmp_path / "m.F32.gguf", "F32")
    assert (file_type(source), file_type(q8), file_type(f32)) == ("Q4_1", "Q8_0", "ALL_F32")
    before, after, exact = _weights(source), _weights(q8), _weights(f32)
    assert after["blk.0.ffn_up.weight"][0] == "Q8_0" and after["blk.0.attn_norm.weight"][0] == "F32"
    original = before["blk.0.ffn_up.weight"][1]
    np.testing.assert_array_equal(exact["blk.0.ffn_up.weight"][1], original)  # float32: the same weights exactly
    step = np.abs(original).reshape(64, 3, 32).max(-1, keepdims=True) / 127  # Q8_0's scale per block of 32
    error = np.abs(after["blk.0.ffn_up.weight"][1] - original).reshape(64, 3, 32)
    # half a step, plus the float16 rounding of the block's scale (127 steps x 2^-11 relative)
    assert (error <= step * (0.5 + 127 * 2.0**-11)).all() and error.max() > 0
    from gguf import GGUFReader

    assert GGUFReader(q8).fields["tokenizer.chat_template"].contents() == "{{ messages }}"
    with pytest.raises(ValueError, match="'F32' or 'Q8_0'"):
        requantize_gguf(source, tmp_path / "x.gguf", "Q4_0")


def test_auto_recodes_a_small_q4_1_file_once(tmp_path, caplog):
    source = tiny_gguf(tmp_path / "m.Q4_1.gguf")
    folder = tmp_path / "cache"
    with caplog.at_level("INFO", logger="hf_critic.backends.gguf_files"):
        first = recoded_gguf(source, "auto", folder=folder)
    assert first.parent == folder and first.name.endswith(".Q8_0.gguf") and file_type(first) == "Q8_0"
    assert "re-encoded as Q8_0" in caplog.text and "--gguf-recode off" in caplog.text
    stamp = first.stat().st_mtime_ns
    assert recoded_gguf(source, "auto", folder=folder) == first and first.stat().st_mtime_ns == stamp  # reused
    assert sorted(p.name for p in folder.iterdir()) == [first.name, first.name + ".sha256"]  # no partial file
    assert recoded_gguf(source, "F32", folder=folder).name.endswith(".F32.gguf")


def test_what_auto_leaves_alone(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    q4_1 = tiny_gguf(tmp_path / "m.Q4_1.gguf")
    q8 = tiny_gguf(tmp_path / "m.Q8_0.gguf", "Q8_0")
    assert recoded_gguf(q4_1, "off", folder=folder) == q4_1
    assert recoded_gguf(q8, "auto", folder=folder) == q8  # Q8_0 has the fast kernels already
    assert recoded_gguf(q8, "Q8_0", folder=folder) == q8
    assert parameter_count(q4_1) == 64 * 96 + 96
    monkeypatch.setattr(gguf_files, "AUTO_MAX_PARAMETERS", 1000)  # a large model: decoding reads every byte
    assert recoded_gguf(q4_1, "auto", folder=folder) == q4_1
    assert not folder.exists()
    with pytest.raises(ValueError, match="recode must be one of auto, off, Q8_0, F32"):
        recoded_gguf(q4_1, "fast", folder=folder)


def test_an_unwritable_cache_falls_back_to_the_file_under_auto(tmp_path, caplog):
    source = tiny_gguf(tmp_path / "m.Q4_1.gguf")
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the cache folder should be")
    with caplog.at_level("WARNING", logger="hf_critic.backends.gguf_files"):
        assert recoded_gguf(source, "auto", folder=blocked / "gguf") == source
    assert "running the file as it is" in caplog.text


# ------------------------------------------------------------------------------------------- broken and truncated files
def test_the_fingerprint_is_of_the_whole_file_not_its_name_size_and_first_mib(tmp_path):
    first, second = tmp_path / "a" / "m.gguf", tmp_path / "b" / "m.gguf"
    first.parent.mkdir(), second.parent.mkdir()
    head = b"GGUF" + bytes(2 << 20)  # more than a MiB of equal metadata
    first.write_bytes(head + b"weights one")
    second.write_bytes(head + b"weights two")  # same name, same size, same first MiB
    assert gguf_files.fingerprint(first) != gguf_files.fingerprint(second)
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "copy.gguf").write_bytes(first.read_bytes())
    assert gguf_files.fingerprint(tmp_path / "c" / "copy.gguf") == gguf_files.fingerprint(first)


def test_two_checkpoints_with_one_name_and_size_get_their_own_re_encodings(tmp_path):
    folder = tmp_path / "cache"
    one = tiny_gguf(tmp_path / "one.gguf")
    (tmp_path / "x").mkdir()
    two = tmp_path / "x" / "one.gguf"
    raw = bytearray(one.read_bytes())
    raw[-8:] = bytes(8)  # other weights in the last block, same header, name and size
    two.write_bytes(bytes(raw))
    assert recoded_gguf(one, "auto", folder=folder) != recoded_gguf(two, "auto", folder=folder)


def test_a_truncated_re_encoding_left_in_the_cache_is_rebuilt(tmp_path, caplog):
    source = tiny_gguf(tmp_path / "m.Q4_1.gguf")
    folder = tmp_path / "cache"
    kept = recoded_gguf(source, "auto", folder=folder)
    whole = kept.read_bytes()
    kept.write_bytes(whole[: len(whole) // 2])  # a copy cut short, a full disk...
    with caplog.at_level("WARNING", logger="hf_critic.backends.gguf_files"):
        again = recoded_gguf(source, "auto", folder=folder)
    assert again == kept and again.read_bytes() == whole
    assert "does not match its fingerprint" in caplog.text


def test_a_forced_re_encoding_into_an_unwritable_cache_is_one_line(tmp_path):
    source = tiny_gguf(tmp_path / "m.Q4_1.gguf")
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the cache folder should be")
    with pytest.raises(gguf_files.GGUFError, match="gguf_recode=Q8_0: cannot write the re-encoding") as err:
        recoded_gguf(source, "Q8_0", folder=blocked / "gguf")
    assert "HF_CRITIC_CACHE" in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("cut", [8, 200, -100])
def test_a_fake_or_truncated_gguf_is_one_line_naming_the_file(tmp_path, cut):
    whole = tiny_gguf(tmp_path / "m.gguf").read_bytes()
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(whole[:cut])
    with pytest.raises(gguf_files.GGUFError, match="broken.gguf.*not a readable GGUF file"):
        gguf_files.check_gguf(broken)
