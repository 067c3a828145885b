"""``clustertwin ingest once`` on files, a live HTTP exporter and with site mapping."""

from __future__ import annotations

import argparse
import json

from ingest.commands import register


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    code = args.func(args)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_dcgm_file_raw_labels_json(fixtures_dir, capsys):
    path = fixtures_dir / "dcgm-exporter/nvidia-aicr-h100/metrics-sampled-8xH100.prom"
    code, out, _ = run(["ingest", "once", "--source", "dcgm", "--target", str(path), "--json"], capsys)
    assert code == 0
    doc = json.loads(out)
    assert doc["ok"] and len(doc["samples"]) == 24
    power = [s for s in doc["samples"] if s["metric"] == "gpu_power_w" and s["entity"] == "gpu-node-1/gpu0"]
    assert power[0]["value"] == 113.611 and power[0]["kind"] == "gpu"
    assert doc["counts"]["unmapped_names"] == {"DCGM_FI_DEV_MEM_COPY_UTIL": 6}


def test_ipmi_text_mapped_to_site(tmp_path, capsys):
    f = tmp_path / "sdr.txt"
    f.write_text(
        "GPU3 Temp        | 04h | ok  | 11.4 | 44 degrees C\nPSU Power        | 09h | ok  | 10.1 | 700 Watts\n"
    )
    code, out, err = run(
        ["ingest", "once", "--source", "ipmi", "--target", str(f), "--host", "bmc-h1-r01-k01-n2", "--site", "demo"],
        capsys,
    )
    assert code == 0
    lines = out.strip().splitlines()
    assert any(line.split()[:4] == ["gpu", "h1-r01-k01-n2/gpu3", "gpu_temp_c", "44"] for line in lines), out
    assert any(line.split()[:2] == ["node", "h1-r01-k01-n2/PSU"] for line in lines), out
    assert "2 sample(s)" in err


def test_unknown_hosts_reported_with_site(fixtures_dir, capsys):
    path = fixtures_dir / "prometheus-api/nvidia-aicr-h100/query_DCGM_FI_DEV_GPU_TEMP.json"
    code, out, _ = run(
        ["ingest", "once", "--source", "prometheus", "--target", str(path), "--site", "demo", "--json"], capsys
    )
    doc = json.loads(out)
    assert code == 0 and len(doc["samples"]) == 16
    assert all(s["entity_id"] == -1 and s["entity"].startswith("?gpu-node-") for s in doc["samples"])
    assert doc["counts"]["unknown_hosts"] == 2


def test_redfish_mockup_directory(fixtures_dir, capsys):
    path = fixtures_dir / "redfish-dmtf/public-cooling-unit"
    code, out, _ = run(
        ["ingest", "once", "--source", "redfish", "--target", str(path), "--host", "cdu1", "--json"], capsys
    )
    doc = json.loads(out)
    flows = {s["entity"]: s["value"] for s in doc["samples"] if s["metric"] == "coolant_flow_lpm"}
    secondary = json.loads((path / "ThermalEquipment/CDUs/1/SecondaryCoolantConnectors/1/index.json").read_text())
    assert code == 0 and flows == {"cdu1/CDUs/1": secondary["FlowLitersPerMinute"]["Reading"]}


def test_live_url_and_failures(http_server, capsys):
    text = 'DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-a",Hostname="h1-r01-k01-n0"} 52\n'
    server = http_server(lambda path, n: (200, "text/plain", text) if path == "/metrics" else None)
    code, out, _ = run(
        ["ingest", "once", "--source", "dcgm", "--target", server.url + "/metrics", "--site", "demo"], capsys
    )
    assert code == 0 and out.split()[:4] == ["gpu", "h1-r01-k01-n0/gpu0", "gpu_temp_c", "52"]
    code, _, err = run(
        ["ingest", "once", "--source", "dcgm", "--target", server.url + "/nope", "--retries", "0"], capsys
    )
    assert code == 1 and "HTTP 404" in err
    code, _, err = run(["ingest", "once", "--source", "dcgm", "--target", "/no/such/file"], capsys)
    assert code == 2 and "neither a URL" in err
