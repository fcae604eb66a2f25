"""The plan's web page: the GPT-3 175B plan's page is small and renders
fast in headless Chromium (Debian's `chromium`), with no console error, and
the screenshot shows a drawn page."""

import json
import os
import shutil
import subprocess
import time

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


def test_pipeline_plan_page(tmp_path):
    """A plan with pipeline stages: its section in the plan and the Gantt
    chart of the simulated 1F1B schedule (two stages, four microbatches:
    8 forward and 8 backward bars)."""
    from autopar.models import gpt_decoder
    path = tmp_path / "gpt.onnx"
    assert gpt_decoder.main([
        "--layers", "4", "--hidden", "64", "--heads", "4", "--seq", "16",
        "--batch", "8", "--vocab", "128", "--shape-only", "-o",
        str(path)]) == 0
    plan = autopar.plan(autopar.load(path), "2x2", cluster=CLUSTER_2AXES,
                        mode="training", loss="cross_entropy",
                        microbatches=4, stages=2)
    pipe = json.loads(plan.to_json())["pipeline"]
    assert pipe["stages"] == 2 and pipe["schedule"] == "1f1b"
    assert [s["blocks"] for s in pipe["stage_list"]] == [[0, 2], [2, 4]]
    kinds = [e["kind"] for e in pipe["events"]]
    assert len(kinds) == 16, kinds
    html = plan.to_html()
    assert "One pipeline stage" not in html
    assert "aria-label=\"pipeline\"" in html
    with pytest.raises(autopar.AutoparError, match="do not divide axis 0"):
        autopar.plan(autopar.load(path), "2x2", cluster=CLUSTER_2AXES,
                     mode="training", loss="cross_entropy", stages=3)
