# tune_engine.Space: built from dicts and files, described as plain data,
# configurations checked; bad input raises ValueError naming the problem.
import pytest

import tune_engine


def test_space_from_lists_guesses_kinds_and_applies_constraints(small_space):
    assert small_space.names == ["x", "y"]
    assert small_space.parameters == [
        {"name": "x", "kind": "discrete", "size": 4},
        {"name": "y", "kind": "categorical", "size": 2},
    ]
    assert len(small_space) == 2
    assert small_space.cartesian_size == 8
    assert small_space.count_valid() == 6
    assert small_space.constraints == ["x > 1"]
    assert small_space.values("x") == [1, 2, 4, 8]
    assert small_space.is_valid({"x": 2, "y": "b"})
    assert not small_space.is_valid({"x": 1, "y": "b"})


def test_space_takes_nni_specs_and_kind_overrides():
    space = tune_engine.Space(
        {"tile": {"_type": "factor", "_value": [16, 2]}, "order": {"_type": "perm", "_value": 3}, "n": [1, 2, 3]},
        kinds={"n": "categorical"},
    )
    kinds = {p["name"]: p["kind"] for p in space.parameters}
    assert kinds == {"tile": "factorization", "order": "permutation", "n": "categorical"}
    assert space.values("tile") == [[1, 16], [2, 8], [4, 4], [8, 2], [16, 1]]
    assert space.is_valid({"tile": (4, 4), "order": [2, 0, 1], "n": 3})


def test_space_from_file_reads_the_vendored_specs(data_dir):
    space = tune_engine.Space.from_file(data_dir / "specs" / "convolution_milo_T1.json")
    assert space.cartesian_size == 10240
    assert space.count_valid() == 4362
    assert space.origin.endswith("convolution_milo_T1.json")


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: tune_engine.Space({}), "no parameters"),
        (lambda: tune_engine.Space({"x": 3}), "parameter 'x': 3 is not a list of values"),
        (lambda: tune_engine.Space({"x": "abc"}), "parameter 'x'"),
        (lambda: tune_engine.Space({"x": []}), "the list of values is empty"),
        (lambda: tune_engine.Space({"x": [1, None]}), "None is not a number"),
        (lambda: tune_engine.Space({"x": [1, 2]}, constraints=["z > 1"]), "constraints: constraint 'z > 1'"),
        (lambda: tune_engine.Space({"x": [1, 2]}, kinds={"q": "discrete"}), "kinds names 'q'"),
        (lambda: tune_engine.Space({"x": [1, 2]}, kinds={"x": "weird"}), "'weird'"),
        (lambda: tune_engine.Space({"t": {"_type": "bogus", "_value": 1}}), "bogus"),
        (lambda: tune_engine.Space.from_file("/no/such/space.json"), "/no/such/space.json"),
    ],
)
def test_bad_spaces_raise_value_error_naming_the_problem(build, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        build()


def test_bad_configurations_raise_value_error(small_space):
    with pytest.raises(ValueError, match="'x': 3 is not one of its values"):
        small_space.is_valid({"x": 3, "y": "a"})
    with pytest.raises(ValueError, match="'y' has no value"):
        small_space.is_valid({"x": 2})
    with pytest.raises(ValueError, match="expected a dict"):
        small_space.is_valid([2, "a"])
    with pytest.raises(KeyError, match="'z' is not a parameter"):
        small_space.values("z")
