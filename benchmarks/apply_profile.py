"""Write a full params file = params.yaml deep-merged with a profile override file (+ optional KEY=VALUE overrides).

``corecode`` commands read one complete params file (``--params``), so a profile (configs/profiles/*.yaml, only the
keys it changes) is merged here and the result validated with corecode's own loader before it is written:

    python benchmarks/apply_profile.py configs/profiles/gpu-dev.yaml -o params.gpu-dev.yaml
    python benchmarks/apply_profile.py configs/profiles/gpu-dev.yaml -o params.gpu-dev.yaml --set sandbox.isolation=unshare
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml


def deep_merge(base: dict, over: dict, where: str = "") -> dict:
    """``over`` wins; mappings merge key by key, anything else (lists included) is replaced whole."""
    out = dict(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = deep_merge(out[k], v, f"{where}{k}.")
        else:
            out[k] = v
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("profile", type=Path)
    ap.add_argument("--base", type=Path, default=Path("params.yaml"))
    ap.add_argument("-o", "--out", type=Path, required=True)
    ap.add_argument("--set", dest="overrides", action="append", default=[], help="KEY=VALUE (dotted, YAML value)")
    a = ap.parse_args(argv)
    from corecode.config import ConfigError, load_params

    over = yaml.safe_load(a.profile.read_text()) or {}
    if not isinstance(over, dict):
        sys.exit(f"{a.profile}: top level must be a mapping of params sections")
    merged = deep_merge(yaml.safe_load(a.base.read_text()) or {}, over)
    a.out.write_text(f"# generated: {a.base} + {a.profile} by benchmarks/apply_profile.py; do not edit\n"
                     + yaml.safe_dump(merged, sort_keys=False))
    try:  # validate (with the overrides) so that a bad profile fails here, naming the key
        params = load_params(a.out, a.overrides)
    except ConfigError as e:
        sys.exit(str(e))
    if a.overrides:
        a.out.write_text(f"# generated: {a.base} + {a.profile} + {a.overrides} by benchmarks/apply_profile.py\n"
                         + yaml.safe_dump(params.model_dump(mode="json"), sort_keys=False))
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
