"""nnsight (its own tracing code) on gwb.torch modules: NNsight(gwb.torch.module(...)) traces, reads
and writes gwb's named sites, and an activation patch written with nnsight gives gwb's patch
effect on both models (resid, offset and head sites). Runs in the pip-torch leg (python/pins.txt)."""

import numpy as np
import pytest
import torch
from nnsight import NNsight

import gwb

# A pair with a wide clean - corrupt gap on both models (1.5 and 3.3), so that the normalised effect
# is as well conditioned as the metric: with a gap of 4e-4 (the transformer on "She said ..." /
# "He said ...") the engine's float32 rounding alone moves the effect by 3e-3.
CLEAN = "The sisters were happy, and they"
CORRUPT = "The brother was happy, and he"


def site_module(model, site, row, column, offsets):
    """The envoy of one cell of gwb patch's sweep: resid.L (one position), offset.L.D or head.L.H."""
    if site == "resid":
        return model.resid[row]
    if site == "offset":
        return model.offset[row][str(offsets[row][column])]
    return model.head[row][column]


def nnsight_metric(model, ids, she, he, site=None, row=0, column=0, offsets=None, saved=None):
    """logit[she] - logit[he] at the last token; with `saved`, that site's value is patched in."""
    with model.trace(torch.tensor([ids])):
        if saved is not None:
            envoy = site_module(model, site, row, column, offsets)
            value = envoy.output.clone()
            if site == "resid":
                value[:, column] = saved[:, column]  # one position of the block input
            else:
                value[:] = saved  # the whole head / offset, as gwb patch does
            envoy.output = value
        logits = model.output.save()
    return float(logits[0, -1, she] - logits[0, -1, he])


@pytest.mark.parametrize("kind,site,cells", [
    ("grassmann", "resid", [(3, 4), (1, 1), (5, 5)]),
    ("grassmann", "offset", [(2, 0), (4, 1)]),
    ("transformer", "resid", [(3, 4), (0, 1)]),
    ("transformer", "head", [(2, 1), (5, 3)]),
])
def test_a_patch_written_with_nnsight_equals_gwb_patch(kind, site, cells):
    m = gwb.bundled(kind)
    model = NNsight(gwb.torch.module(m, dtype=torch.float64))
    clean, corrupt = m.encode(CLEAN), m.encode(CORRUPT)
    she, he = m._m.piece_id("they"), m._m.piece_id("he")
    p = m.patch(clean=CLEAN, corrupt=CORRUPT, answer="they", wrong="he", site=site, progress=False)
    offsets = m.layer_offsets if kind == "grassmann" else None
    clean_metric = nnsight_metric(model, clean, she, he)
    corrupt_metric = nnsight_metric(model, corrupt, she, he)
    assert abs(clean_metric - float(p["clean_metric"])) < 1e-4 * max(1.0, abs(clean_metric))
    worst = 0.0
    for row, column in cells:
        with model.trace(torch.tensor([clean])):
            saved = site_module(model, site, row, column, offsets).output.save()
        metric = nnsight_metric(model, corrupt, she, he, site, row, column, offsets, saved)
        effect = (metric - corrupt_metric) / (clean_metric - corrupt_metric)
        assert p["computed"][row, column] and p["defined"][row, column]
        worst = max(worst, abs(metric - p["metric"][row, column]), abs(effect - p["effect"][row, column]))
        assert abs(metric - p["metric"][row, column]) < 1e-5 * max(1.0, abs(metric)), (row, column)
        assert abs(effect - p["effect"][row, column]) < 1e-5, (row, column)
    # A patch that changes nothing would pass the comparisons too: this one moves the metric.
    assert max(abs(p["metric"][r, c] - corrupt_metric) for r, c in cells) > 1e-3
    print(f"{kind} {site}: worst difference from gwb patch {worst:.2e}")


def test_the_readme_section_runs_as_written(tmp_path, monkeypatch):
    from conftest import readme_python_blocks, run_readme_block
    run_readme_block(readme_python_blocks("In the ecosystem: SAELens, TransformerLens, nnsight, transformers")[2], monkeypatch, tmp_path)
