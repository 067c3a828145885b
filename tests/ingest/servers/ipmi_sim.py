"""OpenIPMI ``ipmi_sim`` on 127.0.0.1: 8 GPU temperature sensors and a PSU power sensor.

Config follows the OpenIPMI LAN simulator format: ``lan.conf`` (LAN channel, user) and
``bmc.emu`` (MC, sensors, full SDR records).  Values can be changed live by writing
``sensor_set_value`` commands to the simulator's stdin.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .readiness import listening_ports, load_scaled_s, poll_until

USER, PASSWORD = "admin", "secret"
GPU_TEMPS_C = (41, 42, 43, 44, 45, 46, 47, 48)
PSU_POWER_RAW = 175  # × M=4 → 700 W
PSU_SENSOR = 9
START_BASE_S = 10.0  # start-up wait on an idle machine, scaled by load (servers.readiness)


def full_sdr(
    num: int,
    name: str,
    sensor_type: int,
    unit_code: int,
    m: int = 1,
    entity: int = 0x03,
    inst: int = 1,
    thresholds: tuple[int, int, int] = (95, 90, 85),
) -> str:
    """``main_sdr_add`` line of a full sensor record (type 01h, unsigned, linear, M, no B/exp)."""
    nb = name.encode()
    body = [
        0x20,
        0x00,
        num,
        entity,
        inst,
        0x67,
        0x88,
        sensor_type,
        0x01,
        0xC0,
        0x0F,
        0xC0,
        0x7F,
        0x38,
        0x38,
        0x00,
        unit_code,
        0x00,
        0x00,
        m & 0xFF,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x03,
        0x60,
        0xB0,
        0x00,
        0xFF,
        0x00,
        *thresholds,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0x00,
        0xC0 | len(nb),
        *nb,
    ]
    rec = [0x00, 0x00, 0x51, 0x01, len(body), *body]
    return "main_sdr_add 0x20 " + " ".join(f"0x{b:02x}" for b in rec)


def _sensor(num: int, sensor_type: int, raw: int, thresholds: tuple[int, int, int]) -> list[str]:
    t = " ".join(str(x) for x in thresholds)
    return [
        f"sensor_add 0x20 0 {num} 0x{sensor_type:02x} 0x01",
        f"sensor_set_value 0x20 0 {num} {raw} 0",
        f"sensor_set_threshold 0x20 0 {num} settable 111000 {t} 00 00 00",
        f"sensor_set_event_support 0x20 0 {num} enable scanning per-state "
        "000111111000000 000111111000000 000111111000000 000111111000000",
    ]


def write_config(directory: Path, port: int) -> tuple[Path, Path]:
    """Write ``lan.conf`` and ``bmc.emu`` for a BMC on 127.0.0.1:``port`` (0: a free port the simulator binds)."""
    lan = directory / "lan.conf"
    lan.write_text(
        f"""name "testbmc"
set_working_mc 0x20
  startlan 1
    addr 127.0.0.1 {port}
    priv_limit admin
    allowed_auths_callback none md2 md5 straight
    allowed_auths_user none md2 md5 straight
    allowed_auths_operator none md2 md5 straight
    allowed_auths_admin none md2 md5 straight
    guid a123456789abcdefa123456789abcdef
  endlan
  startnow false
  user 2 true  "{USER}" "{PASSWORD}" admin 10 none md2 md5 straight
"""
    )
    lines = [
        "mc_setbmc 0x20",
        "mc_add 0x20 0 no-device-sdrs 0x23 9 8 0x9f 0x1291 0xf02",
        "sel_enable 0x20 1000 0x0a",
        "sensor_add 0x20 0 0 35 0x6f event-only",
    ]
    for g, temp in enumerate(GPU_TEMPS_C):
        num = g + 1
        lines += _sensor(num, 0x01, temp, (95, 90, 85))
        lines.append(full_sdr(num, f"GPU{g} Temp", 0x01, 0x01, entity=0x0B, inst=g + 1))
    lines += _sensor(PSU_SENSOR, 0x08, PSU_POWER_RAW, (250, 240, 230))
    lines.append(full_sdr(PSU_SENSOR, "PSU Power", 0x08, 0x06, m=4, entity=0x0A, thresholds=(250, 240, 230)))
    lines.append("mc_enable 0x20")
    emu = directory / "bmc.emu"
    emu.write_text("\n".join(lines) + "\n")
    return lan, emu


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class IpmiSim:
    """A running simulator: where it listens and how to change a sensor."""

    proc: subprocess.Popen
    port: int
    log_path: Path

    @property
    def url(self) -> str:
        return f"ipmi://{USER}:{PASSWORD}@127.0.0.1:{self.port}"

    def set_raw(self, sensor: int, raw: int) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"sensor_set_value 0x20 0 {sensor} {raw} 0\n")
        self.proc.stdin.flush()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)


def start(directory: Path) -> IpmiSim:
    """Start ipmi_sim on a port it binds itself; fails with a clear message if the binaries are missing.

    Returns once ``ipmitool mc info`` is answered on the port the simulator's own socket
    holds (read from /proc: see :mod:`.readiness`), polling up to a load-scaled deadline.
    """
    for binary, package in (("ipmi_sim", "openipmi"), ("ipmitool", "ipmitool")):
        if shutil.which(binary) is None:
            raise RuntimeError(f"{binary} not found on PATH: install the Debian package {package!r} (make test does)")
    lan, emu = write_config(directory, 0)  # port 0: no other process can take the port before the simulator
    state = directory / "state"
    state.mkdir(exist_ok=True)
    log_path = directory / "ipmi_sim.log"
    log = log_path.open("w")
    proc = subprocess.Popen(
        ["ipmi_sim", "-c", str(lan), "-f", str(emu), "-s", str(state)],
        stdin=subprocess.PIPE,
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
    )
    sim = IpmiSim(proc, 0, log_path)
    try:
        sim.port = _wait_bound(sim)
        if not poll_until(lambda: _answers(sim), START_BASE_S, interval_s=0.1):
            raise RuntimeError(
                f"ipmi_sim did not answer on 127.0.0.1:{sim.port} within "
                f"{load_scaled_s(START_BASE_S):.0f} s: {log_path.read_text()[-2000:]}"
            )
    except BaseException:
        sim.stop()
        raise
    return sim


def _check_alive(sim: IpmiSim) -> None:
    if sim.proc.poll() is not None:
        raise RuntimeError(f"ipmi_sim exited {sim.proc.returncode}: {sim.log_path.read_text()[-2000:]}")


def _wait_bound(sim: IpmiSim) -> int:
    """The UDP port the simulator's own socket is bound to."""

    def probe():
        _check_alive(sim)
        return listening_ports(sim.proc.pid, "udp")

    ports = poll_until(probe, START_BASE_S, interval_s=0.1)
    if len(ports) != 1:
        raise RuntimeError(f"ipmi_sim bound {sorted(ports) or 'no port'}: {sim.log_path.read_text()[-2000:]}")
    return ports.pop()


def _answers(sim: IpmiSim) -> bool:
    """One ``ipmitool mc info`` against the simulator; False when it fails or hangs."""
    _check_alive(sim)
    try:
        r = subprocess.run(
            [
                "ipmitool",
                "-I",
                "lanplus",
                "-C",
                "3",
                "-H",
                "127.0.0.1",
                "-p",
                str(sim.port),
                "-U",
                USER,
                "-P",
                PASSWORD,
                "mc",
                "info",
            ],
            capture_output=True,
            text=True,
            timeout=load_scaled_s(10.0),
        )
    except subprocess.TimeoutExpired:
        return False
    return r.returncode == 0
