"""The plan's web page: the GPT-3 175B plan's page is small and renders
fast in headless Chromium (Debian's `chromium`), with no console error, and
the screenshot shows a drawn page."""

import json
import os
import shutil
import subprocess
import time
from html import escape

import pytest

import autopar
from conftest import A100, CLUSTER_2AXES, MLP

CHROMIUM = shutil.which("chromium")
WIDTH, HEIGHT = 1280, 2400


@pytest.fixture(scope="module")
def gpt3_plan(tmp_path_factory):
    from autopar.models import gpt_decoder
    path = tmp_path_factory.mktemp("gpt3") / "gpt3.onnx"
    assert gpt_decoder.main([
        "--layers", "96", "--hidden", "12288", "--heads", "96", "--seq",
        "2048", "--batch", "1536", "--vocab", "50257", "--last-token",
        "--shape-only", "-o", str(path)]) == 0
    return autopar.plan(autopar.load(path), "128x8", cluster=A100)


def test_page_content():
    plan = autopar.plan(autopar.load(MLP), "2x2", cluster=CLUSTER_2AXES)
    html = plan.to_html()
    assert html.startswith("<!DOCTYPE html>")
    # Self-contained: no script, nothing fetched.
    assert "<script" not in html and "http://" not in html
    assert "https://" not in html and " src=" not in html
    for section in ("The plan and the baselines",
                    "Compute against communication per op kind",
                    "Memory per device over program order",
                    "Pipeline schedule",
                    "sharding per grid axis"):
        assert section in html
    for node in ("/0/Gemm", "/2/Gemm", "/4/Gemm"):
        assert node in html
    assert html.count("<svg") == 3  # no pipeline: one stage
    assert "One pipeline stage" in html


def test_gpt3_page_is_small(gpt3_plan, tmp_path):
    html = gpt3_plan.to_html()
    assert len(html.encode()) < 2 * 1024 * 1024
    # The 96 layers are one repeated block, drawn once.
    assert "repeated block x96" in html
    assert html.count("<tr><td>h0.") > 0 and "<tr><td>h1." not in html
    assert "binding point: " in html


# Times the plan page inside the browser, from navigation to the page
# loaded and laid out (Chromium's own start-up, several seconds on a loaded
# machine, is not part of it). The harness, not the page, has a script.
TIMING_HARNESS = """<!DOCTYPE html><html><body>
<iframe id="plan" src="plan.html" width="1280" height="2400"></iframe>
<script>
document.getElementById('plan').addEventListener('load', function () {
  var height = this.contentDocument.documentElement.getBoundingClientRect()
      .height;
  console.log('autopar-render-ms ' + performance.now().toFixed(1) +
              ' height ' + height);
});
</script></body></html>
"""


def run_chromium(page, screenshot, extra=()):
    """Renders `page` headless; returns (seconds, stderr)."""
    start = time.monotonic()
    result = subprocess.run(
        [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", *extra,
         "--no-first-run", "--disable-extensions", "--hide-scrollbars",
         "--enable-logging=stderr", "--v=0",
         f"--user-data-dir={os.path.dirname(screenshot)}/profile",
         f"--window-size={WIDTH},{HEIGHT}", f"--screenshot={screenshot}",
         "file://" + str(page)],
        capture_output=True, text=True, timeout=120)
    elapsed = time.monotonic() - start
    assert result.returncode == 0, result.stderr[-2000:]
    return elapsed, result.stderr


def console_errors(stderr):
    return [line for line in stderr.splitlines()
            if "CONSOLE" in line or "Refused to" in line
            or "Uncaught" in line]


@pytest.mark.skipif(CHROMIUM is None,
                    reason="chromium is not installed (scripts/setup.sh "
                           "installs Debian's chromium)")
def test_gpt3_page_renders_in_chromium(gpt3_plan, tmp_path):
    from PIL import Image
    page = tmp_path / "plan.html"
    page.write_text(gpt3_plan.to_html())
    # The console check catches an error: a page that logs one.
    bad = tmp_path / "bad.html"
    bad.write_text("<!DOCTYPE html><html><body><script>"
                   "console.error('deliberate')</script></body></html>")
    _, stderr = run_chromium(bad, str(tmp_path / "bad.png"))
    assert any("deliberate" in line for line in console_errors(stderr))
    _, stderr = run_chromium(page, str(tmp_path / "plan.png"))
    assert console_errors(stderr) == []
    harness = tmp_path / "timing.html"
    harness.write_text(TIMING_HARNESS)
    _, stderr = run_chromium(harness, str(tmp_path / "timing.png"),
                             ["--allow-file-access-from-files"])
    timing = [line for line in stderr.splitlines()
              if "autopar-render-ms" in line]
    assert len(timing) == 1, stderr[-2000:]
    words = timing[0].split("autopar-render-ms ")[1].split()
    render_ms, height = float(words[0]), float(words[2].rstrip('",'))
    print(f"GPT-3 plan page ({len(page.read_bytes())} bytes): loaded and "
          f"laid out in {render_ms:.0f} ms, {height:.0f} px tall")
    assert height > 1000
    assert render_ms < 2000
    image = Image.open(tmp_path / "plan.png").convert("RGB")
    assert image.size == (WIDTH, HEIGHT)
    pixels = list(image.getdata())
    drawn = sum(1 for p in pixels if p != (255, 255, 255))
    colours = len(set(pixels))
    # Text, bars, the memory curve and the sharding table: many colours
    # and a good part of the page drawn.
    assert drawn > 0.03 * len(pixels), drawn
    assert colours > 50, colours


@pytest.fixture(scope="module")
def small_gpt(tmp_path_factory):
    """A 4-layer GPT decoder, shape only."""
    from autopar.models import gpt_decoder
    path = tmp_path_factory.mktemp("gpt") / "gpt.onnx"
    assert gpt_decoder.main([
        "--layers", "4", "--hidden", "64", "--heads", "4", "--seq", "16",
        "--batch", "8", "--vocab", "128", "--shape-only", "-o",
        str(path)]) == 0
    return autopar.load(path)


@pytest.fixture(scope="module")
def pipeline_plan(small_gpt):
    return autopar.plan(small_gpt, "2x2", cluster=CLUSTER_2AXES,
                        mode="training", loss="cross_entropy",
                        microbatches=4, stages=2)


def check_stage_sections(plan, html):
    """The page of a pipeline plan draws its stages' plans: every drawn op
    of each stage in the sharding table under its stage, each stage's
    memory profile with its peak, the op kinds over all stages."""
    stages = plan.stage_plans
    assert len(stages) == plan.stages == 2
    assert "No memory profile" not in html
    assert html.count('aria-label="memory"') == 2
    table = html.split("sharding per grid axis</h2>")[1]
    for index, stage in enumerate(stages):
        section = table.split(f"<h3>stage {index} (")[1].split("<h3>")[0]
        drawn = [op["node"] for op in stage.json["ops"]
                 if "shares_strategy_with" not in op]
        shared = [op["node"] for op in stage.json["ops"]
                  if "shares_strategy_with" in op]
        assert drawn and shared  # two blocks per stage, the second shared
        for node in drawn:
            assert f"<tr><td>{escape(node)}</td>" in section, node
        for node in shared:
            assert f"<tr><td>{escape(node)}</td>" not in html, node
        assert "repeated block x2" in section
        peak = stage.json["predicted"]["peak_memory_bytes"]
        assert max(b for _, b in stage.memory_profile) == peak
        assert (f"peak: {stage.json['predicted']['peak_at']} (" in html
                or f"binding point: {stage.json['predicted']['peak_at']} ("
                in html)
        # Each op is priced: the stage's compute is the sum of its ops'.
        assert sum(op.get("compute_s", 0) for op in stage.json["ops"]) == \
            pytest.approx(stage.predicted["compute_s"], rel=1e-9)
    matmuls = sum(1 for stage in stages for op in stage.json["ops"]
                  if op["op"] == "autopar.matmul")
    assert f">matmul x{matmuls}</text>" in html
    assert set(plan.strategies) == {
        op["node"] for stage in stages for op in stage.json["ops"]}


def test_pipeline_plan_page(pipeline_plan, small_gpt):
    """A plan with pipeline stages: its section in the plan and the Gantt
    chart of the simulated 1F1B schedule (two stages, four microbatches:
    8 forward and 8 backward bars)."""
    plan = pipeline_plan
    pipe = json.loads(plan.to_json())["pipeline"]
    assert pipe["stages"] == 2 and pipe["schedule"] == "1f1b"
    assert [s["blocks"] for s in pipe["stage_list"]] == [[0, 2], [2, 4]]
    kinds = [e["kind"] for e in pipe["events"]]
    assert len(kinds) == 16, kinds
    html = plan.to_html()
    assert "One pipeline stage" not in html
    assert "aria-label=\"pipeline\"" in html
    check_stage_sections(plan, html)
    # The automatic pipeline is compared with the plans without stages.
    assert set(plan.baselines) == {"replicated", "data", "tensor"}
    assert ">tensor</text>" in html
    with pytest.raises(autopar.AutoparError, match="do not divide axis 0"):
        autopar.plan(small_gpt, "2x2", cluster=CLUSTER_2AXES,
                     mode="training", loss="cross_entropy", stages=3)


def test_fixed_pipeline_plan_page(small_gpt):
    """A `--fixed` pipeline: each stage's data x tensor view of its slab
    (here tensor parallel over 2 devices) in the page."""
    plan = autopar.plan(small_gpt, "2x2", cluster=CLUSTER_2AXES,
                        mode="training", loss="cross_entropy",
                        fixed="tp=2,pp=2,dp=1,micro_batch=2")
    assert plan.strategy == "fixed"
    assert [s.grid for s in plan.stage_plans] == [(2,), (2,)]
    html = plan.to_html()
    check_stage_sections(plan, html)
    assert "): grid 2</h3>" in html


@pytest.mark.skipif(CHROMIUM is None,
                    reason="chromium is not installed (scripts/setup.sh "
                           "installs Debian's chromium)")
def test_pipeline_page_renders_in_chromium(pipeline_plan, tmp_path):
    """The pipeline plan's page in headless Chromium: no console error, and
    the screenshot shows the drawn charts: the Gantt chart's forward (blue)
    and backward (orange) bars and the stages' memory curves."""
    from PIL import Image
    html = pipeline_plan.to_html()

    def render(name, text):
        page = tmp_path / f"{name}.html"
        page.write_text(text)
        _, stderr = run_chromium(page, str(tmp_path / f"{name}.png"))
        assert console_errors(stderr) == []
        image = Image.open(tmp_path / f"{name}.png").convert("RGB")
        assert image.size == (WIDTH, HEIGHT)
        return list(image.getdata())

    pixels = render("pipeline", html)
    drawn = sum(1 for p in pixels if p != (255, 255, 255))
    assert drawn > 0.03 * len(pixels), drawn
    assert len(set(pixels)) > 50
    # The same page with the Gantt chart emptied (its frame kept, so the
    # layout stays): the chart's 8 forward (blue) and 8 backward (orange)
    # bars, 16 px high and wider than 20 px, are what the screenshot loses.
    # The memory curves are drawn too.
    start = html.rindex("<svg", 0, html.index('aria-label="pipeline"'))
    frame_end = html.index(">", start) + 1
    without = render("nogantt", html[:frame_end] +
                     html[html.index("</svg>", start):])

    def count(image, colour):
        return sum(1 for p in image if p == colour)

    for colour in ((0x4e, 0x79, 0xa7), (0xf2, 0x8e, 0x2b)):
        lost = count(pixels, colour) - count(without, colour)
        assert lost > 8 * 16 * 20, (colour, lost)
    assert html.count("<polyline") == 2
