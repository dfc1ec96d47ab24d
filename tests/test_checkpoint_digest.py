"""Checkpoints carry the SHA-256 of their weights and of their model configuration, verified at load: one
flipped byte in a copy of a bundled checkpoint is refused by ``oscsim eval`` in one line."""

import hashlib
import json
import shutil

import pytest

from oscsim.train.checkpoint import (CONFIG_FILE, DIGEST_KEY, MODEL_FILE, bundled_checkpoints, config_digest,
                                     load_checkpoint, resolve_checkpoint, save_checkpoint)


@pytest.fixture
def copy(tmp_path):
    dst = tmp_path / "ck"
    shutil.copytree(resolve_checkpoint("kuramoto-tiny"), dst)
    return dst


@pytest.mark.parametrize("name", bundled_checkpoints())
def test_every_bundled_checkpoint_carries_its_digests(name):
    folder = resolve_checkpoint(name)
    meta = json.loads((folder / CONFIG_FILE).read_text())
    assert meta[DIGEST_KEY] == {MODEL_FILE: hashlib.sha256((folder / MODEL_FILE).read_bytes()).hexdigest(),
                                "config": config_digest(meta)}


def test_one_flipped_byte_is_refused_by_oscsim_eval(copy, capsys):
    from oscsim.cli import main

    data = bytearray((copy / MODEL_FILE).read_bytes())
    data[-1000] ^= 0x01  # one bit of one weight: still a valid safetensors file with finite numbers
    (copy / MODEL_FILE).write_bytes(bytes(data))
    assert main(["eval", str(copy), "--max-windows", "1", "--split", "valid"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert MODEL_FILE in err and "SHA-256 is not the one recorded" in err, err


def test_a_configuration_edited_into_another_valid_one_is_refused(copy):
    meta = json.loads((copy / CONFIG_FILE).read_text())
    meta["config"]["omega_base"] = 5000.0  # builds the same shapes: only the digest can tell
    (copy / CONFIG_FILE).write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="does not match its recorded SHA-256"):
        load_checkpoint(copy)


def test_saved_checkpoints_carry_digests_and_older_ones_still_load(copy, tmp_path):
    model, meta = load_checkpoint(copy)
    out = save_checkpoint(tmp_path / "saved", model, {"note": "re-saved"})
    saved = json.loads((out / CONFIG_FILE).read_text())
    assert saved[DIGEST_KEY][MODEL_FILE] == hashlib.sha256((out / MODEL_FILE).read_bytes()).hexdigest()
    load_checkpoint(out)
    del meta[DIGEST_KEY]  # a checkpoint written before digests: loaded, unverified
    (copy / CONFIG_FILE).write_text(json.dumps(meta))
    load_checkpoint(copy)
    meta[DIGEST_KEY] = {"config": "x"}
    (copy / CONFIG_FILE).write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="must hold the hex SHA-256"):
        load_checkpoint(copy)
