"""The roofline arithmetic of ``benchmarks/roofline.py`` on a tiny model: work counted as torch counts it.

The benchmark's shares are only as right as the FLOPs and bytes it divides by; here they are checked against
``torch.utils.flop_counter.FlopCounterMode`` on a real forward pass, and the measured ceilings are checked to be
finite, positive figures.
"""

from __future__ import annotations

import importlib.util
import math
import sys
import time
from pathlib import Path

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode
from transformers import LlamaConfig, LlamaForCausalLM, LlamaForSequenceClassification

SPEC = importlib.util.spec_from_file_location(
    "roofline", Path(__file__).resolve().parents[1] / "benchmarks" / "roofline.py"
)
roofline = sys.modules.setdefault("roofline", importlib.util.module_from_spec(SPEC))
SPEC.loader.exec_module(roofline)


def tiny_config(**extra) -> LlamaConfig:
    """Two layers, 64 wide, 4 heads of 16 (2 key-value heads), 300 tokens; eager attention (two matmuls, which
    ``FlopCounterMode`` counts)."""
    return LlamaConfig(
        hidden_size=64,
        intermediate_size=96,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=300,
        attn_implementation="eager",
        **extra,
    )


@pytest.fixture(scope="module", params=[True, False], ids=["tied", "untied"])
def tiny(request):
    torch.manual_seed(0)
    return LlamaForCausalLM(tiny_config(tie_word_embeddings=request.param)).eval()


def test_linear_shapes_leave_out_the_output_head(tiny):
    shapes = roofline.linear_shapes(tiny)
    # per layer: q (64x64), k and v (64x32 each: 2 kv heads of 16), o (64x64), gate and up (64x96), down (96x64)
    assert shapes == {(64, 64): 4, (64, 32): 4, (64, 96): 4, (96, 64): 2}


@pytest.mark.parametrize("lengths", [[7], [5, 11, 3]])
def test_prefill_flops_equal_torch_count_up_to_the_causal_half(tiny, lengths):
    """A forward pass computes the full ``L x L`` score matrix and masks half of it; the roofline counts only the
    causal half (the work an engine must do), so torch's count exceeds ours by exactly the masked half."""
    counted = 0
    for n in lengths:
        ids = torch.randint(0, 300, (1, n))
        with FlopCounterMode(display=False) as counter, torch.inference_mode():
            tiny(input_ids=ids, logits_to_keep=1)
        counted += counter.get_total_flops()
    ours = roofline.prefill_flops(tiny, lengths)
    masked = sum(4 * 2 * 4 * 16 * (n * n - n * (n + 1) / 2) for n in lengths)  # layers 2, heads 4, head_dim 16
    assert ours == pytest.approx(counted - masked, rel=1e-9)


def test_the_head_counts_once_per_output_position(tiny):
    one, three = roofline.prefill_flops(tiny, [9]), roofline.prefill_flops(tiny, [9], outputs_per_row=3)
    assert three - one == 2 * (2 * 64 * 300)


def test_weight_bytes_and_decode_bound(tiny):
    params = sum(p.numel() for p in tiny.parameters())  # a tied embedding is one parameter
    assert roofline.weight_bytes(tiny) == 4 * params
    assert roofline.weight_bytes(tiny.to(torch.bfloat16)) == 2 * params
    tiny.to(torch.float32)
    # 25 GB/s over 270 MB per step: 92.6 steps/s, 741 tokens/s at batch 8 (the figure worked by hand)
    assert roofline.decode_bound(25e9, 270_000_000, 8) == pytest.approx(740.7, abs=0.1)


def test_kv_bytes_and_the_whole_decoding_roofline():
    # SmolLM2-135M: 30 layers, 3 key-value heads of 64: 11,520 bytes of bfloat16 KV cache a token
    config = LlamaConfig(num_hidden_layers=30, num_attention_heads=9, num_key_value_heads=3, hidden_size=576)
    assert roofline.kv_bytes_per_token(config, 2) == 2 * 30 * 3 * 64 * 2
    # 300 MB a step at 30 GB/s: 10 ms; 1 GFLOP at 200 GFLOP/s: 5 ms -> the read binds, 8 tokens per 10 ms
    assert roofline.decode_roofline(30e9, 200e6, 100e6, 1e9, 200e9, 8) == (pytest.approx(800.0), "bandwidth")
    # 4 GFLOP at 100 GFLOP/s: 40 ms -> compute binds
    assert roofline.decode_roofline(30e9, 200e6, 100e6, 4e9, 100e9, 8) == (pytest.approx(200.0), "compute")


def test_measured_ceilings_are_finite_and_positive(tiny):
    roof = roofline.measure_roofline(tiny, ("float32",), tokens=16)
    assert set(roof.peaks) == {"float32"} and roof.threads == torch.get_num_threads()
    assert math.isfinite(roof.peaks["float32"]) and roof.peaks["float32"] > 1e6
    assert math.isfinite(roof.bandwidth) and roof.bandwidth > 1e8


def test_load_line_and_rss():
    assert roofline.load_line().startswith("load average ") and "(1 / 5 / 15 min)" in roofline.load_line()
    assert 0 < roofline.peak_rss_gb() < 1000


def test_rss_watch_sees_a_peak_inside_the_block():
    """The sampled peak catches memory held only inside the block, which the process-wide ``ru_maxrss`` would keep
    reporting ever after; the end figure drops once it is freed."""
    with roofline.RssWatch(interval=0.02) as watch:
        buffer = torch.ones(50_000_000)  # 200 MB, every page touched
        time.sleep(0.2)
        del buffer
    assert watch.peak >= watch.start + 0.15
    assert watch.end <= watch.peak - 0.1
    assert 0 < roofline.rss_gb() < 1000


def test_prefill_flops_of_a_reward_model_count_its_score_head_on_every_token():
    """A sequence-classification reward model has no output embeddings: its one-label score head is an
    ``nn.Linear`` applied to every position, so it counts per token, and ``outputs_per_row`` adds nothing."""
    torch.manual_seed(0)
    reward = LlamaForSequenceClassification(tiny_config(num_labels=1, pad_token_id=0)).eval()
    assert roofline.linear_shapes(reward)[(64, 1)] == 1
    counted = 0
    for n in (6, 13):
        with FlopCounterMode(display=False) as counter, torch.inference_mode():
            reward(input_ids=torch.randint(1, 300, (1, n)))
        counted += counter.get_total_flops()
    masked = sum(4 * 2 * 4 * 16 * (n * n - n * (n + 1) / 2) for n in (6, 13))
    assert roofline.prefill_flops(reward, [6, 13], outputs_per_row=0) == pytest.approx(counted - masked, rel=1e-9)
