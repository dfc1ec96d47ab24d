"""A sweep on a Dask cluster secured by TLS: ``Security.temporary()`` through the library, certificate files
through ``oscsim sweep --scheduler tls://... --tls-ca-file/--tls-cert/--tls-key``; the table equals the one
computed in this process. The cluster runs its worker in this process (``processes=False``) to stay quick."""

import shutil
import subprocess

import pytest

from mapping.sweep import load_spec, run_sweep
from _kill import assert_same_but

distributed = pytest.importorskip("distributed")

SPEC = """
name = "tls"
checkpoint = "kuramoto-tiny"
[tokens]
windows = 1
seq_len = 16
[chip]
device = "ideal"
settle_cycles = 2.0
[axes]
"coupling.bits" = [4, 5]
"""
WALL = ["wall_s", "chip_wall_s"]


@pytest.fixture(scope="module")
def spec_path(tmp_path_factory):
    p = tmp_path_factory.mktemp("spec") / "tls.toml"
    p.write_text(SPEC)
    return p


@pytest.fixture(scope="module")
def reference(spec_path, tmp_path_factory):
    return run_sweep(load_spec(spec_path), tmp_path_factory.mktemp("ref"), workers=0, progress=False)


def _cluster(security):
    return distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, security=security,
                                    dashboard_address=":0", silence_logs=40)


def _same(a, b):
    assert_same_but(a, b, WALL)


def test_a_sweep_runs_on_a_tls_cluster_with_temporary_certificates(spec_path, reference, tmp_path):
    pytest.importorskip("cryptography")
    sec = distributed.Security.temporary()
    with _cluster(sec) as c:
        assert c.scheduler_address.startswith("tls://")
        _same(run_sweep(load_spec(spec_path), tmp_path / "s", scheduler=c.scheduler_address, security=sec,
                        progress=False), reference)


def _pem(folder, name, ca=None):
    """A key and a certificate (self-signed for the CA, else signed by ``ca``) made by the openssl command."""
    key, crt = folder / f"{name}.key", folder / f"{name}.pem"
    subprocess.run(["openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", str(key)], check=True,
                   capture_output=True)
    req = ["openssl", "req", "-new", "-key", str(key), "-subj", f"/CN={name}", "-days", "1"]
    if ca is None:
        subprocess.run([*req, "-x509", "-out", str(crt)], check=True, capture_output=True)
    else:
        csr = folder / f"{name}.csr"
        subprocess.run([*req, "-out", str(csr)], check=True, capture_output=True)
        subprocess.run(["openssl", "x509", "-req", "-in", str(csr), "-CA", str(ca[1]), "-CAkey", str(ca[0]),
                        "-CAcreateserial", "-out", str(crt), "-days", "1"], check=True, capture_output=True)
    return key, crt


def test_oscsim_sweep_takes_the_certificate_files(spec_path, reference, tmp_path, capsys):
    if shutil.which("openssl") is None:
        pytest.skip("no openssl command to make certificates")
    from mapping.sweep import load_results
    from oscsim.cli import main

    ca = _pem(tmp_path, "ca")
    node_key, node = _pem(tmp_path, "node", ca)
    client_key, client = _pem(tmp_path, "client", ca)
    sec = distributed.Security(tls_ca_file=str(ca[1]), tls_scheduler_cert=str(node), tls_scheduler_key=str(node_key),
                               tls_worker_cert=str(node), tls_worker_key=str(node_key), tls_client_cert=str(node),
                               tls_client_key=str(node_key), require_encryption=True)
    with _cluster(sec) as c:
        rc = main(["sweep", str(spec_path), "--out", str(tmp_path / "s"), "--scheduler", c.scheduler_address,
                   "--tls-ca-file", str(ca[1]), "--tls-cert", str(client), "--tls-key", str(client_key),
                   "--no-progress"])
    assert rc == 0, capsys.readouterr().err
    _same(load_results(tmp_path / "s"), reference)


def test_tls_options_without_a_tls_scheduler_are_refused_in_one_line(spec_path, tmp_path, capsys):
    from oscsim.cli import main

    assert main(["sweep", str(spec_path), "--out", str(tmp_path / "s"), "--tls-cert", str(spec_path)]) == 2
    err = capsys.readouterr().err
    assert "go with --scheduler tls://" in err and "Traceback" not in err
    assert main(["design", str(spec_path), "--out", str(tmp_path / "d"), "--scheduler", "tcp://h:1",
                 "--tls-ca-file", str(spec_path), "--tls-cert", str(spec_path)]) == 2
    assert "need a tls:// scheduler" in capsys.readouterr().err
