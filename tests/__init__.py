"""The test suite, a package so that tests import their shared helpers (``from tests._eval_instruct_support import …``)."""
