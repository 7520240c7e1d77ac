"""An override pasted over several lines (the README's several-jobs example) composes as on one line
(issue 24: Hydra's lexer refused the line break inside the quoted jobs list)."""

from __future__ import annotations

from omegaconf import OmegaConf

from evaluator import config

JOBS = ("jobs=[{name: tall, traffic: {n_tasks: 64, seed: 1}},\n"
        "   {name: mover, traffic: {n_tasks: 32, seed: 2}}]")


def test_multi_line_override_composes_as_one_line():
    spread = config.compose(["traffic=random_pairs", JOBS])
    flat = config.compose(["traffic=random_pairs", " ".join(JOBS.split("\n"))])
    assert OmegaConf.to_yaml(spread) == OmegaConf.to_yaml(flat)
    assert [j["name"] for j in OmegaConf.to_container(spread.jobs)] == ["tall", "mover"]


def test_one_line_keeps_single_line_overrides_and_spaces_inside_values():
    assert config.one_line(["a=1", "name='x  y'"]) == ["a=1", "name='x  y'"]
    assert config.one_line(["jobs=[1,\r\n  2]"]) == ["jobs=[1, 2]"]
