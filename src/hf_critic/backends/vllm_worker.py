"""vLLM's offline engine (``vllm.LLM``) in a worker process, run with vLLM's own Python, answering hf-critic's requests.

Run as ``<vLLM's python> -I .../vllm_worker.py --model FOLDER [--runner pooling] [--llm-args JSON]`` by
:class:`hf_critic.backends.vllm.VllmWorker`. ``-I`` keeps this file's folder off ``sys.path`` (it holds modules named
like packages, ``transformers.py``), so the worker imports nothing of hf-critic but :mod:`vllm_protocol
<hf_critic.backends.vllm_protocol>`, loaded by its file: vLLM's virtualenv has none of hf-critic's dependencies.

The requests arrive on stdin and the answers leave on the process's original stdout; everything vLLM and its libraries
print goes to stderr (file descriptor 1 is pointed there before vLLM loads), so no log line can corrupt an answer.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
from pathlib import Path


def _protocol():
    """The protocol module: imported from the package when this file runs as part of hf-critic, else by its file."""
    if __package__:
        from . import vllm_protocol

        return vllm_protocol
    path = Path(__file__).with_name("vllm_protocol.py")
    spec = importlib.util.spec_from_file_location("hf_critic_vllm_protocol", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _prompts(message: dict) -> list[dict]:
    return [{"prompt_token_ids": [int(t) for t in ids]} for ids in message["prompts"]]


def _generate(llm, message: dict) -> dict:
    from vllm import SamplingParams

    params = SamplingParams(**message["params"])
    outputs = llm.generate(_prompts(message), params, use_tqdm=False)
    return {
        "outputs": [[list(c.token_ids) for c in out.outputs] for out in outputs],
        "finish_reasons": [[c.finish_reason for c in out.outputs] for out in outputs],
    }


def _logprobs(llm, message: dict) -> dict:
    from vllm import SamplingParams

    wanted = [[int(t) for t in ids] for ids in message["token_ids"]]
    params = [SamplingParams(max_tokens=1, temperature=0.0, logprob_token_ids=ids, detokenize=False) for ids in wanted]
    outputs = llm.generate(_prompts(message), params, use_tqdm=False)
    found = []
    for out, ids in zip(outputs, wanted, strict=True):
        table = out.outputs[0].logprobs[0]  # the distribution after the whole prompt
        found.append([float(table[t].logprob) for t in ids])
    return {"logprobs": found}


def _reward(llm, message: dict) -> dict:
    from vllm import PoolingParams

    outputs = llm.classify(_prompts(message), pooling_params=PoolingParams(use_activation=False), use_tqdm=False)
    return {"rewards": [float(out.outputs.probs[0]) for out in outputs]}


HANDLERS = {"generate": _generate, "logprobs": _logprobs, "reward": _reward}


def serve(llm, requests, channel, protocol) -> None:
    """Answer each request of ``requests`` on ``channel`` until ``stop`` or the end of the input."""
    while True:
        try:
            message = protocol.read_message(requests)
        except ValueError as err:
            protocol.write_message(channel, protocol.failure(err))
            continue
        if message is None:
            return
        op = message.get("op")
        if op == "stop":
            protocol.write_message(channel, protocol.answer(stopped=True))
            return
        try:
            handler = HANDLERS.get(op)
            if handler is None:
                raise ValueError(f"unknown op {op!r}; one of {', '.join(protocol.OPS)}")
            protocol.write_message(channel, protocol.answer(**handler(llm, message)))
        except Exception as err:  # one failed request answers its error; the worker keeps serving
            protocol.write_message(channel, protocol.failure(err))


def main(argv: list[str] | None = None) -> None:
    """Load ``vllm.LLM`` with the given options, say it is ready, then :func:`serve`."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--runner", default="generate", choices=["generate", "pooling"])
    parser.add_argument("--llm-args", default="{}", help="further vllm.LLM keywords as a JSON object")
    args = parser.parse_args(argv)
    protocol = _protocol()
    channel = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # vLLM's logs go to stdout: point it at stderr, answers keep the original stdout
    sys.stdout = sys.stderr
    try:
        import vllm

        llm = vllm.LLM(model=args.model, runner=args.runner, **json.loads(args.llm_args))
    except Exception as err:
        protocol.write_message(channel, protocol.failure(err))
        raise SystemExit(1) from None
    context = llm.llm_engine.model_config.max_model_len
    protocol.write_message(
        channel, protocol.answer(ready=True, vllm=vllm.__version__, runner=args.runner, max_model_len=context)
    )
    serve(llm, sys.stdin, channel, protocol)


if __name__ == "__main__":
    main()
