"""python/autopar/testing/zoo_args.py: the arguments that zoo_check.py,
zoo_precision.py and zoo_batch_split.py share (one default each), the
reading of --models and the cluster description of a grid."""

import argparse
import os
import sys

import pytest

from conftest import SOURCE_DIR

sys.path.insert(0, os.path.join(SOURCE_DIR, "python", "autopar", "testing"))
import zoo_args  # noqa: E402

KNOWN = ["tv_resnet18", "unet", "bert"]


def parser(**kwargs):
    p = argparse.ArgumentParser(prog="zoo_tool")
    zoo_args.add_arguments(p, "models", **kwargs)
    return p


def test_defaults():
    args = parser(clusters=True).parse_args(["--models", "unet"])
    build = os.path.join(SOURCE_DIR, "build")
    assert args.autopar == os.path.join(build, "bin", "autopar")
    assert args.cache == os.path.join(build, "models")
    assert (args.atol, args.rtol) == (1e-4, 1e-3)
    inputs = os.path.join(SOURCE_DIR, "test", "Driver", "Inputs")
    assert args.cluster_1d == os.path.join(inputs,
                                           "cluster-compute-bound-1d.json")
    assert args.cluster_2d == os.path.join(inputs,
                                           "cluster-compute-bound-2d.json")
    for path in (args.cluster_1d, args.cluster_2d):
        assert os.path.isfile(path), path


def test_optional_groups():
    args = parser(tolerances=False).parse_args(["--models", "unet"])
    assert not hasattr(args, "atol") and not hasattr(args, "cluster_1d")
    with pytest.raises(SystemExit):
        parser(tolerances=False).parse_args(["--models", "unet",
                                             "--atol", "1"])


def test_models_required_or_not(capsys):
    with pytest.raises(SystemExit):
        parser().parse_args([])
    assert "--models" in capsys.readouterr().err
    assert parser(models_required=False).parse_args([]).models is None


def test_model_names():
    assert zoo_args.model_names("bert, unet,,", KNOWN) == ["bert", "unet"]
    assert zoo_args.model_names("zoo", KNOWN) == KNOWN
    assert zoo_args.model_names(None, KNOWN) == KNOWN
    assert zoo_args.model_names(None, KNOWN, default=["unet"]) == ["unet"]


def test_model_names_errors():
    with pytest.raises(ValueError, match="not in the zoo: tv_resnet19, gpt"):
        zoo_args.model_names("tv_resnet19,unet,gpt", KNOWN)
    with pytest.raises(ValueError, match="not in '/data': unet"):
        zoo_args.model_names("unet", ["mnist"], where="'/data'")
    with pytest.raises(ValueError, match="names no model"):
        zoo_args.model_names(" , ", KNOWN)


def test_cluster_for():
    args = argparse.Namespace(cluster_1d="one.json", cluster_2d="two.json")
    assert zoo_args.cluster_for(args, "2") == "one.json"
    assert zoo_args.cluster_for(args, "2x2") == "two.json"
    assert zoo_args.cluster_for(args, "2x2x2") == "two.json"
    bare = argparse.Namespace()
    assert zoo_args.cluster_for(bare, "4") == zoo_args.CLUSTER_1D
    assert zoo_args.cluster_for(bare, "2x2") == zoo_args.CLUSTER_2D
