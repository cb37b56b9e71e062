"""Local stand-ins for tests, benchmarks and dry runs: OpenAI-compatible stub servers (:mod:`.servers`), model servers
in child processes (:mod:`.server_process`) and tiny models (:mod:`.tiny_models`); nothing here downloads."""
