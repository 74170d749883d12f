"""SDPA attention masks that never leave a query row without a key (transformers' masks, mended).

transformers 5 builds SDPA's boolean mask without the correction it used to apply (``sdpa_mask``'s
``allow_torch_fix`` is "deprecated and has no effect"): the query row of a left-padding token is causally limited to
keys the padding mask then removes, so it attends to nothing. torch's CPU kernels give such a row 0; GPU kernels can
give it NaN, and a NaN there reaches every real token through the next layer, where the padding positions' keys and
values enter attention with weight 0 (0 x NaN = NaN). That is how ``benchmarks/grpo_step.py --shape 1.5b`` failed on an
H100 (torch 2.11, transformers 5.17, 2026-11-27): with the static KV cache, whose forward ``generate`` compiles and
whose prompts are left-padded to a multiple of 64, the Coder's rollout stopped on a device-side assert in sampling
(``probability tensor contains either inf, nan or element < 0``); without it, two team steps ran.

``mend_sdpa_masks()`` registers the same masks under ``sdpa`` in transformers' ``AttentionMaskInterface`` (its hook
for custom masks), with each row that attends to nothing opened to every key, as transformers 4 did. Those rows'
outputs are never read, and as keys they stay masked for every real row, so a real token's values are exactly what
they are without it (0 x a finite value = 0). Written here because transformers no longer offers the option.
"""

from __future__ import annotations

import torch
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask


def mended_sdpa_mask(*args, **kwargs) -> torch.Tensor | None:
    """``transformers.masking_utils.sdpa_mask``, with every query row that attends to no key opened to all keys."""
    mask = sdpa_mask(*args, **kwargs)
    if mask is None or mask.dtype != torch.bool:
        return mask
    return mask | ~mask.any(dim=-1, keepdim=True)


def mend_sdpa_masks() -> None:
    """Make every model of this process that runs SDPA build its masks with ``mended_sdpa_mask`` (idempotent)."""
    AttentionMaskInterface.register("sdpa", mended_sdpa_mask)
