"""The public API: about twenty names in ``hf_critic``, each importable from the root without loading torch until it
is used, each with its docstring, and each named in the package's docstring (which the API pages render) and on
docs/api/index.md."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import hf_critic

ROOT = Path(__file__).resolve().parents[1]


def test_the_public_api_is_about_twenty_names():
    assert 15 <= len(hf_critic.__all__) <= 25
    assert len(set(hf_critic.__all__)) == len(hf_critic.__all__)


@pytest.mark.parametrize("name", hf_critic.__all__)
def test_each_public_name_resolves_with_its_docstring_and_is_documented(name):
    value = getattr(hf_critic, name)
    if name != "__version__":
        assert (value.__doc__ or "").strip(), f"{name} has no docstring"
        assert f"``{name}``" in hf_critic.__doc__, f"{name} is not named in hf_critic's docstring"
        assert f"`{name}`" in (ROOT / "docs/api/index.md").read_text(encoding="utf-8"), f"{name} not on the API index"


def test_importing_the_root_and_listing_its_names_loads_no_torch():
    code = "import sys, hf_critic; dir(hf_critic); print('torch' in sys.modules, 'hf_critic.critic' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]


def test_a_public_name_is_the_object_its_home_module_defines():
    from hf_critic.critics.registry import register
    from hf_critic.critics.specs import load_cascade

    assert hf_critic.register_critic is register
    assert hf_critic.load_cascade is load_cascade
