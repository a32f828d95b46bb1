"""cluster.yaml: valid for Ray's own cluster launcher, and closed to the internet but for SSH; and the
benchmark submitted as a Ray job to a real local Ray cluster with token authentication: a head with no
CPUs and two worker nodes, whose trials the engine spreads over both nodes, several cells at once.

No cloud is contacted: the config is checked with the launcher's schema and default-filling code, and
with its AWS security-group logic, which creates nothing when every node type names its own group.
"""

from __future__ import annotations

import copy
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from processes import Spawned, free_port, wait_for_port

from pipeline.engine.usage import usage

REPO = Path(__file__).resolve().parents[1]
CLUSTER = REPO / "cluster.yaml"
DASHBOARD_PORTS = {8265, 10001, 6379, 52365}


@pytest.fixture(scope="module")
def config() -> dict:
    return yaml.safe_load(CLUSTER.read_text())


def test_valid_against_rays_cluster_schema(config):
    import jsonschema
    import ray.autoscaler
    from ray.autoscaler._private.util import prepare_config, validate_config

    schema = json.loads((Path(ray.autoscaler.__file__).parent / "ray-schema.json").read_text())
    jsonschema.validate(config, schema)  # the file as written
    validate_config(prepare_config(copy.deepcopy(config)))  # after the launcher fills in its defaults
    assert config["provider"]["type"] == "aws"


def test_cpu_head_and_autoscaling_gpu_workers(config):
    types = config["available_node_types"]
    head = types[config["head_node_type"]]
    assert head["resources"].get("GPU", 0) == 0 and head["resources"]["CPU"] > 0
    gpu = [t for name, t in types.items() if name != config["head_node_type"] and t["resources"].get("GPU")]
    assert gpu and all(t["min_workers"] == 0 and t["max_workers"] >= 1 for t in gpu)


def test_ray_version_is_pinned(config):
    import ray

    images = [config["docker"]["head_image"], config["docker"]["worker_image"]]
    assert all(re.fullmatch(rf"rayproject/ray:{re.escape(ray.__version__)}-py311(-gpu)?", i) for i in images)
    assert config["docker"]["worker_image"].endswith("-gpu")
    installs = " ".join(config["head_setup_commands"] + config["worker_setup_commands"])
    assert f"ray[default,tune,train]=={ray.__version__}" in installs
    assert "/whl/cpu" in " ".join(config["head_setup_commands"])
    assert re.search(r"/whl/cu\d+", " ".join(config["worker_setup_commands"]))
    assert "-e /home/ray/attnbench" in installs and config["file_mounts"]["/home/ray/attnbench"] == "."


def test_no_ingress_from_the_internet(config):
    """Every node type names a pre-made security group, so Ray never creates its default one (which
    opens SSH to 0.0.0.0/0); no rule in the file opens anything to the world or a Ray port."""
    for name, t in config["available_node_types"].items():
        assert t["node_config"].get("SecurityGroupIds"), name
    rules = config["provider"].get("security_group", {}).get("IpPermissions", [])
    for rule in rules:
        cidrs = [r.get("CidrIp") for r in rule.get("IpRanges", [])] + [
            r.get("CidrIpv6") for r in rule.get("Ipv6Ranges", [])]
        assert "0.0.0.0/0" not in cidrs and "::/0" not in cidrs, rule
        ports = set(range(rule.get("FromPort", 0), rule.get("ToPort", 65535) + 1))
        assert not ports & DASHBOARD_PORTS, rule
    assert "0.0.0.0/0" not in yaml.safe_dump(config)


def test_the_launcher_creates_no_security_group_of_its_own(config):
    # Ray's AWS module needs boto3 (a test extra, as users of cluster.yaml have it for `ray up`).
    from ray.autoscaler._private.aws import config as aws_config

    # With a group on every node type the launcher's group set-up returns before touching AWS.
    prepared = aws_config._configure_security_group(copy.deepcopy(config))
    assert prepared["available_node_types"] == config["available_node_types"]


def test_dashboard_on_loopback_and_token_auth_on(config):
    head = " ".join(config["head_start_ray_commands"])
    assert "--dashboard-host=127.0.0.1" in head and "0.0.0.0" not in head
    for cmd in [c for c in config["head_start_ray_commands"] + config["worker_start_ray_commands"]
                if "ray start" in c]:
        assert "RAY_AUTH_MODE=token" in cmd, cmd
    # The same token on every node: the file from `ray get-auth-token --generate` is mounted everywhere.
    assert config["file_mounts"]["/home/ray/.ray/auth_token"] == "~/.ray/auth_token"
    # The env var is the one Ray 2.60 reads.
    from ray._private.authentication.authentication_token_setup import AUTH_MODE_ENV_VAR

    assert AUTH_MODE_ENV_VAR == "RAY_AUTH_MODE"


def test_docs_security_group_commands_open_only_ssh_from_a_chosen_range():
    text = (REPO / "docs" / "CLUSTER.md").read_text()
    ingress = [line for line in text.splitlines() if "authorize-security-group-ingress" in line
               or "--port" in line or "--cidr" in line]
    assert ingress and "0.0.0.0/0" not in "\n".join(ingress)
    assert re.search(r"--port 22\b", text) and "--cidr \"$MY_CIDR\"" in text
    assert not any(f"--port {p}" in text for p in DASHBOARD_PORTS)
    assert "ray dashboard cluster.yaml" in text
    assert "ray rsync-down cluster.yaml /home/ray/attnbench/results.duckdb ." in text


# Eight cells of two ~1 s trials each: enough for four slots to hold trials of several cells at once;
# and eight of a model of one's own (the example's gated attention, by import path), whose package is
# in neither the working directory nor the environment: the job sends it to the nodes (py_modules).
TINY = {
    "name": "jobtiny", "seed": 0, "datasets": [{"sklearn": "wine"}],
    "protocol": {"folds": 4, "sample_sizes": [60, "all"]},
    "models": [{"name": "mlp", "trials": 2, "fixed": {"max_epochs": 60, "patience": 60, "d_block": 64}},
               {"name": "gated", "builder": "attnbench_gated.gated:GatedAttentionNet", "trials": 1,
                "defaults": {"d_token": 8}, "fixed": {"max_epochs": 30, "patience": 30}}],
}
N_CELLS = 16


def ray_cli(*args: str, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess:
    ray = str(Path(sys.executable).with_name("ray"))
    return subprocess.run([ray, *args], env=env, capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
def test_job_submitted_to_a_token_authenticated_cluster(tmp_path: Path):
    # A short temp dir: Ray's socket paths must stay under 107 characters.
    temp = Path(f"/tmp/ab-{secrets.token_hex(3)}")
    gcs, dash = free_port(), free_port()
    token = secrets.token_hex(16)
    env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token, "RAY_TMPDIR": str(temp),
           "RAY_USAGE_STATS_ENABLED": "0"}
    env.pop("RAY_ADDRESS", None)
    work = tmp_path / "job"
    for part in ("pipeline", "suites"):
        shutil.copytree(REPO / part, work / part, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", work)
    (work / "suites" / "jobtiny.yaml").write_text(yaml.safe_dump(TINY))
    package = tmp_path / "user" / "attnbench_gated"
    shutil.copytree(REPO / "examples" / "gated_attention" / "attnbench_gated", package,
                    ignore=shutil.ignore_patterns("__pycache__"))
    db = tmp_path / "r.duckdb"
    ray = str(Path(sys.executable).with_name("ray"))
    nodes = Spawned()
    try:
        # A head with no CPUs (it runs the job's driver, no trial) and two worker nodes of 2 CPUs each.
        # Each node's agent gets a port of its own: the job API needs the head's agent, and the default
        # port may be held by another Ray on this machine (the test session's own, for one).
        nodes.start([ray, "start", "--block", "--head", "--num-cpus=0", f"--port={gcs}",
                     f"--dashboard-port={dash}", "--include-dashboard=true", "--dashboard-host=127.0.0.1",
                     f"--temp-dir={temp}", "--disable-usage-stats", f"--dashboard-agent-listen-port={free_port()}"],
                    env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for_port(gcs, timeout_s=300)  # bounds a hang only: Ray's start is slow on two loaded cores
        # Another node on the same machine needs its own temp dir: two nodes sharing one would share
        # runtime_resources/, and one node's agent deletes the job's working_dir while the driver runs in it.
        for name in ("a", "b"):
            nodes.start([ray, "start", "--block", f"--address=127.0.0.1:{gcs}", "--num-cpus=2",
                         f"--temp-dir={temp}-{name}", f"--dashboard-agent-listen-port={free_port()}"],
                        env={**env, "RAY_TMPDIR": f"{temp}-{name}"}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for_port(dash, timeout_s=300)  # the dashboard loads while both worker nodes start
        deadline = time.monotonic() + 300
        while "/4.0 CPU" not in (st := ray_cli("status", f"--address=127.0.0.1:{gcs}", env=env).stdout):
            assert time.monotonic() < deadline, f"the worker nodes did not join: {st}"
            time.sleep(1)

        # Without the token the job API refuses the request.
        anon = {k: v for k, v in env.items() if not k.startswith("RAY_AUTH")}
        anon["RAY_AUTH_MODE"] = "disabled"
        denied = ray_cli("job", "list", "--address", f"http://127.0.0.1:{dash}", env=anon, timeout=60)
        assert denied.returncode != 0, denied.stdout

        t0 = time.monotonic()
        agent_deadline = time.monotonic() + 90  # the head's job agent registers a few seconds after `ray start`
        while True:
            sub = ray_cli("job", "submit", "--address", f"http://127.0.0.1:{dash}", "--submission-id", "jobtiny",
                          "--working-dir", str(work), "--runtime-env-json", json.dumps({"py_modules": [str(package)]}),
                          "--", sys.executable, "-m", "pipeline.cli", "run",
                          "suites/jobtiny.yaml", "--db", str(db), "--no-report", env=env, timeout=400)
            if "No available agent" not in sub.stderr or time.monotonic() > agent_deadline:
                break
            time.sleep(2)
        # `ray job submit` (without --no-wait) follows the job's logs to its end, then prints its status from the
        # job server, as `ray job logs` and `ray job status` would (each one more command-line start-up).
        said = sub.stdout + sub.stderr
        assert sub.returncode == 0, said[-4000:]
        assert "Job 'jobtiny' succeeded" in said and f"{N_CELLS} cells done, 0 failed" in said, said[-3000:]
        print(f"job finished in {time.monotonic() - t0:.1f} s")

        import duckdb

        with duckdb.connect(str(db), read_only=True) as con:
            rows = con.execute("SELECT model, status, accuracy, model_kind FROM results").fetchall()
            hw = json.loads(con.execute("SELECT hardware FROM runs").fetchone()[0])
            trials = con.execute("SELECT * FROM trials").df()
        assert len(rows) == N_CELLS and all(r[1] == "ok" and r[2] > 0.6 for r in rows if r[0] == "mlp"), rows
        gated = [r for r in rows if r[0] == "gated"]  # the user's model ran on the nodes, with its kind stored
        assert len(gated) == 8 and all(r[1] == "ok" and r[2] > 0.4 and r[3] == "attention" for r in gated), gated
        assert hw["cluster_cpus"] == 4  # the job's driver joined the cluster, not a Ray of its own
        # The engine spreads the trials over both worker nodes, several cells at once.
        use = usage(trials)
        assert use.nodes == 2, trials[["node", "worker"]]
        assert trials.worker.nunique() == 4
        assert use.cells_at_once_on_every_node >= 3, use
    finally:
        nodes.stop()
        shutil.rmtree(temp, ignore_errors=True)
        for name in ("a", "b"):
            shutil.rmtree(f"{temp}-{name}", ignore_errors=True)
