"""CriticBench (Lan et al., 2024; open-compass/CriticEval): critique ability in four dimensions (feedback, comparison,
correction, meta-feedback) over nine tasks. Modules: :mod:`.prompts` (the published prompts as templates),
:mod:`.loaders` (the Hub layout and prediction folders), :mod:`.scoring` (verdict parsers and the objective metrics),
:mod:`.report` (the meta-eval report's CriticBench tables). Nothing is imported here: each module loads on its own.
"""
