# tune_engine.replay gives the statistics `tune-engine replay --json` prints
# for the same arguments; bad arguments raise ValueError.
import json
import os
import subprocess

import pytest

import tune_engine


@pytest.fixture(scope="module")
def dataset(data_dir):
    return str(data_dir / "replay" / "conv_a100_slice.json.gz")


def test_replay_matches_the_command(dataset):
    statistics = tune_engine.replay(dataset, strategy="opevo", budget=40, runs=3, seed=2, **{"lambda": 4})
    command = [os.environ["TUNE_CLI_PATH"], "replay", "--dataset", dataset, "--strategy", "opevo", "--budget", "40",
               "--runs", "3", "--seed", "2", "--hyper", "lambda=4", "--json"]
    printed = json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)
    assert statistics == printed
    assert statistics["runs"] == 3
    assert [point["evals"] for point in statistics["at"]] == [20, 40]


def test_replay_is_reproducible_from_the_seed(dataset):
    first = tune_engine.replay(dataset, strategy="random", budget=20, runs=2, seed=5)
    again = tune_engine.replay(dataset, strategy="random", budget=20, runs=2, seed=5)
    other = tune_engine.replay(dataset, strategy="random", budget=20, runs=2, seed=6)
    assert first == again
    assert first["at"] != other["at"]


@pytest.mark.parametrize(
    "arguments, message",
    [
        (dict(dataset="/no/such/cache.json"), "/no/such/cache.json"),
        (dict(strategy="nope"), "unknown strategy 'nope'"),
        (dict(budget=0), "budget"),
        (dict(budget=-5), "budget is -5"),
        (dict(bogus=3, strategy="opevo"), "bogus"),
        (dict(kinds="/no/such/kinds.json"), "/no/such/kinds.json"),
    ],
)
def test_bad_replay_arguments_raise_value_error(dataset, arguments, message):
    arguments = {"dataset": dataset, "budget": 10, "runs": 1, **arguments}
    with pytest.raises(ValueError, match=message):
        tune_engine.replay(**arguments)
