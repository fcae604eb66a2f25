# ===- zoo_args.py - command-line arguments of the zoo tools --------------=== #
#
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===---------------------------------------------------------------------=== #
"""The command-line arguments that the zoo tools share.

zoo_check.py, zoo_precision.py and zoo_batch_split.py each take the autopar
tool (--autopar), the export cache (--cache), a list of zoo models
(--models), and most of them the zoo's tolerances (--atol 1e-4, --rtol
1e-3) and the cluster descriptions of the auto plans (--cluster-1d,
--cluster-2d: the compute-bound ones of test/Driver/Inputs, where the
planner splits what it can). add_arguments() declares them once, with one
default each; model_names() reads --models and cluster_for() picks the
cluster description of a grid.

No third-party imports here, so that the tools can parse their arguments
(and report bad ones) before they load PyTorch.
"""

import argparse
import os
from typing import Iterable, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))

DEFAULT_AUTOPAR = os.path.join(ROOT, "build", "bin", "autopar")
DEFAULT_CACHE = os.path.join(ROOT, "build", "models")
CLUSTER_1D = os.path.join(ROOT, "test", "Driver", "Inputs",
                          "cluster-compute-bound-1d.json")
CLUSTER_2D = os.path.join(ROOT, "test", "Driver", "Inputs",
                          "cluster-compute-bound-2d.json")
# The zoo's tolerances (docs/models.md): never loosened for a model.
ATOL = 1e-4
RTOL = 1e-3
# What --models takes for every model of the zoo (zoo_precision.py).
ALL_MODELS = "zoo"


def add_arguments(parser: argparse.ArgumentParser, models_help: str,
                  models_required: bool = True, tolerances: bool = True,
                  clusters: bool = False) -> None:
    """Declares --autopar, --cache and --models (with `models_help`, required
    unless `models_required` is false) on `parser`, and --atol/--rtol
    (`tolerances`) and --cluster-1d/--cluster-2d (`clusters`)."""
    parser.add_argument("--autopar", default=DEFAULT_AUTOPAR,
                        help="the autopar tool (default: the build tree's)")
    parser.add_argument("--cache", default=DEFAULT_CACHE,
                        help="directory of the exported models (default: "
                        "build/models)")
    parser.add_argument("--models", required=models_required,
                        help=models_help)
    if tolerances:
        parser.add_argument("--atol", type=float, default=ATOL,
                            help=f"absolute tolerance (default {ATOL:g})")
        parser.add_argument("--rtol", type=float, default=RTOL,
                            help=f"relative tolerance (default {RTOL:g})")
    if clusters:
        parser.add_argument("--cluster-1d", default=CLUSTER_1D,
                            help="cluster description of the auto plans on "
                            "1-D grids (default: test/Driver/Inputs/"
                            "cluster-compute-bound-1d.json)")
        parser.add_argument("--cluster-2d", default=CLUSTER_2D,
                            help="cluster description of the auto plans on "
                            "grids of 2 or more axes (default: test/Driver/"
                            "Inputs/cluster-compute-bound-2d.json)")


def split_names(text: str) -> List[str]:
    """'a, b,,c' -> ['a', 'b', 'c']."""
    return [n.strip() for n in text.split(",") if n.strip()]


def model_names(text: Optional[str], known: Iterable[str],
                default: Optional[Iterable[str]] = None,
                where: str = "the zoo") -> List[str]:
    """The models that --models `text` names, in its order: every one of
    `known` for 'zoo', `default` (or every one of `known`) when `text` is
    None. Raises ValueError naming the models not in `known` (`where`
    says what `known` is) and when `text` names none."""
    known = list(known)
    if text is None:
        return list(default) if default is not None else known
    if text.strip() == ALL_MODELS:
        return known
    names = split_names(text)
    if not names:
        raise ValueError("--models names no model")
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"not in {where}: {', '.join(unknown)}")
    return names


def cluster_for(args: argparse.Namespace, grid: str) -> str:
    """The cluster description of an auto plan on `grid` ('2', '2x2'):
    --cluster-2d for a grid of two or more axes, else --cluster-1d (the
    defaults when `args` has neither)."""
    if "x" in grid:
        return getattr(args, "cluster_2d", CLUSTER_2D)
    return getattr(args, "cluster_1d", CLUSTER_1D)
