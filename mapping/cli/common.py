"""What the chip subcommands share: the chip options, building the chip (or loading a chip file), the tokens.

Imports only the standard library and :mod:`oscsim.cli` at module level: the chip, the model and the data load
when a command runs, so building the parsers stays fast.
"""

from __future__ import annotations

from pathlib import Path

from oscsim.cli import float_range

__all__ = ["DEFAULT_CHECKPOINT", "DEFAULT_TOKENS", "chip_config", "add_chip_options", "add_set_option", "check_source",
           "chip_and_model", "validation_tokens", "parse_set", "apply_set"]

DEFAULT_CHECKPOINT = "kuramoto-tiny"
DEFAULT_TOKENS = 2048  # validation tokens of the default `oscsim simulate` (16 windows of 128)


def chip_config(args):
    """The chip configuration of a command: --config (or the default), then --ideal, --kappa-tau, and last the
    --set fields (so an explicit field wins, also on an idealised chip)."""
    from ..config import ChipConfig, load_config

    cfg = load_config(args.config) if getattr(args, "config", None) else ChipConfig()
    if getattr(args, "ideal", False):
        cfg = cfg.idealised()
    if getattr(args, "kappa_tau", None) is not None:
        cfg = cfg.with_kappa_tau(args.kappa_tau)
    return apply_set(cfg, getattr(args, "chip_set", None) or [])


def parse_set(items) -> list:
    """``[(field, value, text)]`` of repeated ``--set FIELD=VALUE``: the dotted field of the chip configuration
    (as in a sweep or design spec) and the value read as a TOML value (``5``, ``0.02``, ``true``, ``"x"``,
    ``[1, 2]``); a bare word that is not TOML (``ring-circuit``, ``HP``, ``none``) is taken as a string."""
    import tomllib

    out = []
    for item in items:
        field, sep, raw = str(item).partition("=")
        field, raw = field.strip(), raw.strip()
        if not sep or not field or not raw:
            raise ValueError(f"--set expects FIELD=VALUE with a dotted chip config field, e.g. --set coupling.bits=5; "
                             f"got {item!r}")
        try:
            value = tomllib.loads(f"v = {raw}")["v"]
        except tomllib.TOMLDecodeError:
            value = raw
        out.append((field, value, raw))
    return out


def apply_set(cfg, items):
    """``cfg`` with each ``--set FIELD=VALUE`` of ``items`` applied in order, each validated as the TOML is (an
    unknown field names the valid ones there; a bad value gets the config's own one-line refusal)."""
    from ..config import config_to_dict
    from ..sweep.spec import check_field, config_with

    for field, value, raw in parse_set(items):
        check_field(field, config_to_dict(cfg), f"--set {field}={raw}")
        try:
            cfg = config_with(cfg, {field: value})
        except (ValueError, TypeError) as exc:
            raise ValueError(f"--set {field}={raw}: {exc}") from None
    return cfg


def add_set_option(p, after: str = "applied after --config, --ideal and --kappa-tau") -> None:
    """``--set FIELD=VALUE`` (repeatable): one chip configuration field, dotted as in sweeps; read by
    :func:`chip_config` (and by ``oscsim design`` for its base chip)."""
    p.add_argument("--set", action="append", default=None, metavar="FIELD=VALUE", dest="chip_set",
                   help="set one chip configuration field, dotted as in sweeps and validated as in the TOML "
                        f"(repeatable; {after}), e.g. --set node_nm=28 --set coupling.bits=5")


def add_chip_options(p) -> None:
    """The chip-configuration options that :func:`chip_config` reads: --config, --ideal, --kappa-tau, --set."""
    p.add_argument("--config", metavar="TOML", help="chip configuration TOML, see examples/chip.toml (default: the 65 nm "
                                                    "ring macromodel preset)")
    p.add_argument("--ideal", action="store_true",
                   help="ideal devices, no noise, no mismatch, unquantised couplings and readout")
    p.add_argument("--kappa-tau", type=float_range(0, lo_open=True), default=None,
                   help="override the settle window by kappa*tau_s [rad], > 0 (default: the configuration's)")
    add_set_option(p)


def chip_and_model(args, cfg):
    """(chip, meta) from a checkpoint name/path or a chip JSON file."""
    from ..preflight import model_config

    src = args.checkpoint
    model_config(src)  # from the files alone: a TOML, a misspelt name or a missing file answers at once
    from ..chip_io import load_chip
    from ..compiler.build import compile as compile_chip
    from ..model_io import load_model

    if src.endswith(".json"):
        chip = load_chip(src)
        if getattr(args, "ideal", False) or getattr(args, "config", None) or getattr(args, "chip_set", None):
            raise ValueError("--ideal/--config/--set cannot change a compiled chip file; pass the checkpoint instead")
        return chip, {}
    try:
        model, meta = load_model(src)
    except FileNotFoundError as exc:
        if src == DEFAULT_CHECKPOINT:
            raise FileNotFoundError(f"{exc}. The bundled checkpoint {DEFAULT_CHECKPOINT!r} is not installed yet; "
                                    f"pass a checkpoint folder (train one with `oscsim train`)") from None
        raise
    return compile_chip(model, cfg, checkpoint=src), meta


def check_source(args, *, tokens: int | None = None, split: str = "valid") -> dict:
    """Check a command's CKPT (and its token count) from the files alone, before torch, the model or the chip
    loads (:mod:`mapping.preflight`); returns the model configuration. A count that is not a whole number of
    windows is said on stderr."""
    import sys

    from ..preflight import model_config, token_windows

    cfg = model_config(args.checkpoint)
    if tokens is not None:
        token_windows(tokens, int(cfg["seq_len"]), split, note=sys.stderr)
    return cfg


def validation_tokens(model_cfg: dict, n_tokens: int, split: str = "valid", T: int | None = None):
    """Inputs and targets (W, T) of the first whole windows of ``n_tokens`` tokens of a bundled split; ``T`` the
    window (None: the model's ``seq_len``; a chip's context: its ``max_tokens``)."""
    from oscsim.data import eval_windows, load_shakespeare

    from ..preflight import token_windows

    T = int(T or model_cfg["seq_len"])
    n_win = token_windows(n_tokens, T, split)
    data = load_shakespeare().split(split)
    x, y = eval_windows(data, T, max_windows=n_win)
    return x, y
