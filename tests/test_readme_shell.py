"""Every ```bash line of README.md matches the project, so a README command that drifts fails here.

Each line (backslash continuations joined, comments dropped; `a && b` is two
commands) is checked by its kind:

- `keras-bert-zoo ...`: parsed by the CLI's own parser, as `main` parses it,
  in a directory where the input files it names exist as placeholders (so the
  full-size finetune and pretrain lines are checked without their data or a
  download); named presets must be in the zoo. Lines that download and train
  nothing are also run.
- `make TARGET`: the Makefile has the target.
- `python examples/...` / `python benchmarks/...`: the script exists and its
  own argparse parser accepts the flags (nothing after parsing runs).
- `pip install ...`: well-formed requirements; a package the Makefile installs
  is pinned and `--no-deps` as the Makefile has it.
- `curl ...`: a request in TF Serving's REST API for a model the README
  exports, on the REST port the README's server publishes; each is also sent
  to the stub server (tests/serving_stub_server.py) over tiny exports.
- `docker run ... tensorflow/serving`: serves an export the README writes.

Any other line fails as an unrecognized README shell line.
"""

import argparse
import configparser
import json
import os
import re
import runpy
import shlex
import socket
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request

import pytest
from packaging.requirements import InvalidRequirement
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from keras_bert_zoo.cli import flag_types
from keras_bert_zoo.cli.main import build_parser
from keras_bert_zoo.cli.main import parse_arguments
from keras_bert_zoo.presets.registry import preset_names
from tests.conftest import shared_path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
    README = f.read()
with open(os.path.join(ROOT, "Makefile"), encoding="utf-8") as f:
    MAKEFILE = f.read()
# What the `keras-bert-zoo` console script runs (setup.cfg's entry point).
CONSOLE_SCRIPT = "import sys; from keras_bert_zoo.cli.main import main; sys.exit(main(sys.argv[1:]))"
# TF Serving's REST API (tensorflow.org/tfx/serving/api_rest): the model's URL and the request body's keys.
REST_PATH = re.compile(r"/v1/models/(?P<model>[^/:]+)(?:/versions/\d+|/labels/[^/:]+)?:(?:predict|classify|regress)")
REST_BODY_KEYS = {"signature_name", "instances", "inputs"}
# The tensorflow/serving image serves $MODEL_BASE_PATH/$MODEL_NAME, gRPC on 8500 and REST on 8501.
SERVING_MODEL_BASE, SERVING_GRPC_PORT, SERVING_REST_PORT = "/models", 8500, 8501


def shell_commands():
    """`(place, argv)` of every command in README.md's ```bash blocks: backslash continuations joined,
    comments dropped, `a && b` split in two; `place` is `README.md:LINE` of the command's first line."""
    commands = []
    for block in re.finditer(r"^```bash\n(.*?)^```$", README, flags=re.S | re.M):
        first = README[: block.start()].count("\n") + 2
        physical = block.group(1).splitlines()
        index = 0
        while index < len(physical):
            start, line = index, physical[index]
            while line.endswith("\\") and index + 1 < len(physical):
                index += 1
                line = line[:-1] + physical[index]
            index += 1
            argv = shlex.split(line, comments=True)
            while argv:
                end = argv.index("&&") if "&&" in argv else len(argv)
                commands.append((f"README.md:{first + start}", argv[:end]))
                argv = argv[end + 1:]
    return commands


def kind(argv):
    """Which test below checks the command; None for a command no test knows."""
    if argv[0] == "keras-bert-zoo":
        return "cli"
    if argv[0] == "make":
        return "make"
    if argv[0] == "python" and len(argv) > 1 and argv[1].split("/")[0] in ("examples", "benchmarks"):
        return "script"
    if argv[:2] == ["pip", "install"]:
        return "pip"
    if argv[0] == "curl":
        return "curl"
    if argv[:2] == ["docker", "run"]:
        return "docker"
    return None


COMMANDS = shell_commands()


def commands_of(name, where=lambda argv: True):
    return [(place, argv) for place, argv in COMMANDS if kind(argv) == name and where(argv)]


def each_command(name, where=lambda argv: True):
    """Parametrizes a test over the README's commands of one kind, each named by its README line."""
    commands = commands_of(name, where)
    return pytest.mark.parametrize("place, argv", commands, ids=[place for place, _ in commands])


def _parse(parser, place, argv, tokens):
    """`parser`'s reading of `tokens`; a refusal fails naming the README line and the form checked."""
    try:
        return parser.parse_args(tokens)
    except SystemExit:
        pytest.fail(f"{place}: `{shlex.join(argv)}` is not of the form checked here: {parser.format_usage().strip()}")


def check_preset(place, argv, preset):
    # An upper-case word is a placeholder the reader fills in (`--preset NAME`).
    assert preset is None or preset in preset_names() or preset.isupper(), \
        f"{place}: `{shlex.join(argv)}` names preset {preset!r}, which is not in the zoo"


def test_every_readme_shell_line_is_of_a_kind_checked_here():
    assert COMMANDS, "README.md's ```bash blocks were not found"
    unrecognized = [f"unrecognized README shell line: {place}: {shlex.join(argv)}"
                    for place, argv in COMMANDS if kind(argv) is None]
    assert not unrecognized, "\n".join(unrecognized)


# --- keras-bert-zoo: the CLI's own parser ---

def _with_placeholder(check):
    """`check` of an input-path flag, after creating an empty file at each path it is given."""
    def placeholder_then_check(text):
        for path in text.split(",") if check is flag_types.file_patterns else [text]:
            # Only inside the working directory: a path outside it is checked as it is.
            if path != "-" and "://" not in path and not os.path.relpath(path).startswith(os.pardir):
                path = path.replace("*", "0")  # a file the glob matches
                os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
                open(path, "a").close()
        return check(text)
    return placeholder_then_check


def placeholder_parser():
    """The CLI's parser, its input files made to exist as placeholders before its own checks see them."""
    parser = build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for subparser in subparsers.choices.values():
        for action in subparser._actions:
            if action.type in (flag_types.existing_file, flag_types.file_or_stdin, flag_types.file_patterns):
                action.type = _with_placeholder(action.type)
    return parser


# saved-model-cli hands its arguments to TensorFlow's tool, unparsed: those lines are run below instead.
@each_command("cli", where=lambda argv: argv[1:2] != ["saved-model-cli"])
def test_readme_cli_line_is_accepted_by_the_cli_parser(place, argv, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    try:
        args = parse_arguments(argv[1:], placeholder_parser())
    except SystemExit as exit:  # --version and --help exit 0 once parsed; a usage error exits 2
        assert exit.code == 0, f"{place}: the CLI refuses `{shlex.join(argv)}`:\n{capsys.readouterr().err}"
        return
    check_preset(place, argv, getattr(args, "preset", None))


def needs_no_download_or_training(argv):
    """Downloads and trains nothing (encode: texts on the command line, the offline default preset)."""
    if argv[1] in ("--version", "presets", "saved-model-cli"):
        return True
    return argv[1] == "encode" and "--preset" not in argv and "--input_file" not in argv


def _free_port():
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


# The models the README's lines export (mrpc: `finetune --task classify`, ner: `--task ner`, qa: the Python
# block's question answerer), built from the tiny checkpoint so that they export in seconds.
TINY_EXPORTS = {
    "mrpc": "kbz.BertClassifier.from_preset(tiny, num_classes=2, sequence_length=16)",
    "ner": "kbz.BertTokenClassifier.from_preset(tiny, label_names=['O', 'B-Disease', 'I-Disease'], sequence_length=16)",
    "qa": "kbz.BertQuestionAnswerer.from_preset(tiny, sequence_length=16, max_query_length=8)",
}


@pytest.fixture(scope="module")
def child_env(tmp_path_factory):
    return dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="3",
                KERAS_BERT_ZOO_CACHE=str(tmp_path_factory.mktemp("readme_shell_cache")))


@pytest.fixture(scope="module")
def workdir(tmp_path_factory, child_env):
    """A directory holding `exports/NAME/1` for each model the README serves."""
    directory = tmp_path_factory.mktemp("readme_shell")
    code = "import keras_bert_zoo as kbz\ntiny = {!r}\n".format(shared_path("checkpoints", "keras_bert_test_tiny"))
    code += "".join(f"{model}.export('exports', model_name={name!r})\n" for name, model in TINY_EXPORTS.items())
    result = subprocess.run([sys.executable, "-c", code], cwd=directory, env=child_env, capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, f"the tiny exports failed:\n{result.stderr[-3000:]}"
    return directory


@pytest.fixture(scope="module")
def serving_ports(workdir, child_env):
    """`(grpc_port, rest_port)` of the stub TF Serving over the exports."""
    grpc_port, rest_port = _free_port(), _free_port()
    server = subprocess.Popen([sys.executable, "-m", "tests.serving_stub_server", str(workdir / "exports"),
                               str(grpc_port), str(rest_port)], cwd=ROOT, env=child_env, stdout=subprocess.PIPE,
                              text=True)
    try:
        assert server.stdout.readline().strip() == "serving", "the stub server did not start"
        yield grpc_port, rest_port
    finally:
        server.kill()
        server.wait()


@pytest.mark.subprocess
@each_command("cli", where=needs_no_download_or_training)
def test_readme_cli_line_that_needs_no_download_or_training_runs(place, argv, child_env, tmp_path, request):
    # saved-model-cli reads the README's exports/mrpc/1; the other lines run anywhere.
    cwd = request.getfixturevalue("workdir") if argv[1] == "saved-model-cli" else tmp_path
    result = subprocess.run([sys.executable, "-c", CONSOLE_SCRIPT, *argv[1:]], cwd=cwd, env=child_env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0 and result.stdout.strip(), \
        f"{place}: `{shlex.join(argv)}` failed (exit {result.returncode}):\n{result.stderr[-3000:]}"


# --- make ---

@each_command("make")
def test_readme_make_target_is_in_the_makefile(place, argv):
    targets = set(re.findall(r"^([\w.-]+)\s*:(?!=)", MAKEFILE, flags=re.M))
    for target in argv[1:]:
        assert target in targets, f"{place}: `{shlex.join(argv)}`: the Makefile has no target {target!r}"


# --- python examples/... and benchmarks/... ---

class _Parsed(BaseException):
    """Raised once a script's parser has accepted its flags, so that nothing after parsing runs.

    A BaseException: the recipes turn ValueError and OSError into an exit.
    """

    def __init__(self, namespace):
        super().__init__()
        self.namespace = namespace


@each_command("script")
def test_readme_script_line_is_accepted_by_the_script_parser(place, argv, monkeypatch, capsys):
    script = os.path.join(ROOT, argv[1])
    assert os.path.isfile(script), f"{place}: `{shlex.join(argv)}`: there is no {argv[1]}"
    for token in argv:  # the project's shared data, named where the README runs from (the repository root)
        if token.startswith("../shared/data/"):
            shared_path(*token.split("/")[3:])
    parse_args = argparse.ArgumentParser.parse_args

    def parse_then_stop(parser, args=None, namespace=None):
        raise _Parsed(parse_args(parser, args, namespace))

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", parse_then_stop)
    monkeypatch.setattr(sys, "argv", argv[1:])
    monkeypatch.syspath_prepend(os.path.dirname(script))  # as `python SCRIPT` puts the script's folder first
    try:
        runpy.run_path(script, run_name="__main__")
    except _Parsed as parsed:
        check_preset(place, argv, getattr(parsed.namespace, "preset", None))
    except SystemExit as exit:
        pytest.fail(f"{place}: {argv[1]} refuses `{shlex.join(argv)}` (exit {exit.code}):\n{capsys.readouterr().err}")
    else:
        pytest.fail(f"{place}: {argv[1]} never parsed its flags with argparse")


# --- pip install ---

def _pip_install_parser():
    """`pip install` with the options this project uses (another is refused until added here)."""
    parser = argparse.ArgumentParser(prog="pip install", add_help=False)
    for option in ("--quiet", "--upgrade", "--no-deps"):
        parser.add_argument(option, action="store_true")
    parser.add_argument("-e", "--editable", action="append", default=[])
    parser.add_argument("requirements", nargs="*")
    return parser


def makefile_pip_installs():
    """`{package name: (requirement, --no-deps)}` of what the Makefile installs by name."""
    installs = {}
    for line in MAKEFILE.splitlines():
        if "pip install" in line and not line.lstrip().startswith("#"):
            tokens = shlex.split(line)
            # Make variables among the arguments (e.g. $(TORCH_INDEX)) are empty by default.
            arguments = [t for t in tokens[tokens.index("install") + 1:] if not t.startswith("$(")]
            options = _pip_install_parser().parse_args(arguments)
            installs.update({canonicalize_name(Requirement(spec).name): (Requirement(spec), options.no_deps)
                             for spec in options.requirements})
    return installs


@each_command("pip")
def test_readme_pip_line_installs_the_project_or_what_the_makefile_installs_alike(place, argv):
    options = _parse(_pip_install_parser(), place, argv, argv[2:])
    config = configparser.ConfigParser(interpolation=None)
    config.read(os.path.join(ROOT, "setup.cfg"))
    installs = makefile_pip_installs()
    for spec in options.requirements:
        if spec == ".":  # the project itself, installed from its clone
            continue
        try:
            requirement = Requirement(spec)
        except InvalidRequirement as error:
            pytest.fail(f"{place}: `{shlex.join(argv)}`: {error}")
        name = canonicalize_name(requirement.name)
        if name == canonicalize_name(config["metadata"]["name"]):
            continue
        assert name in installs, f"{place}: `{shlex.join(argv)}`: the Makefile does not install {requirement.name}"
        assert (requirement, options.no_deps) == installs[name], \
            f"{place}: `{shlex.join(argv)}` installs {requirement} (--no-deps: {options.no_deps}); " \
            f"the Makefile: {installs[name][0]} (--no-deps: {installs[name][1]})"


# --- TF Serving: curl and docker ---

def _curl_request(place, argv):
    """`(url, body)` of a `curl -d BODY URL` line (curl -d POSTs the body as given)."""
    parser = argparse.ArgumentParser(prog="curl", add_help=False)
    parser.add_argument("-d", "--data", required=True)
    parser.add_argument("url")
    args = _parse(parser, place, argv, argv[1:])
    return urllib.parse.urlsplit(args.url if "://" in args.url else "http://" + args.url), args.data


def cli_exports():
    """`{model name: export directory}` of the README's `keras-bert-zoo export` lines."""
    exports = {}
    for _, argv in commands_of("cli", where=lambda argv: argv[1:2] == ["export"]):
        args = parse_arguments(argv[1:], build_parser())
        if args.model_name:
            exports[args.model_name] = os.path.join(args.output, args.model_name)
    return exports


@each_command("curl")
def test_readme_curl_line_is_a_tf_serving_rest_request_for_an_exported_model(place, argv):
    url, body = _curl_request(place, argv)
    path = REST_PATH.fullmatch(url.path)
    assert path, f"{place}: {url.path} is not a TF Serving REST path (/v1/models/NAME[/versions/N]:predict)"
    exported = {*cli_exports(), *re.findall(r'model_name="(\w+)"', README)}  # the CLI's and the Python blocks'
    assert path["model"] in exported, f"{place}: the README exports no model {path['model']!r}"
    assert url.port == SERVING_REST_PORT, f"{place}: TF Serving's REST port is {SERVING_REST_PORT}, not {url.port}"
    request = json.loads(body)
    assert set(request) <= REST_BODY_KEYS and len({"instances", "inputs"} & set(request)) == 1, \
        f"{place}: a REST body has `instances` (rows) or `inputs` (columns), and maybe `signature_name`: {body}"


@pytest.mark.subprocess
@each_command("curl")
def test_readme_curl_line_is_answered_by_the_served_export(place, argv, serving_ports):
    url, body = _curl_request(place, argv)
    address = url._replace(netloc=f"{url.hostname}:{serving_ports[1]}").geturl()
    try:
        with urllib.request.urlopen(urllib.request.Request(address, data=body.encode()), timeout=300) as response:
            reply = json.load(response)
    except (urllib.error.URLError, ConnectionError) as error:
        detail = error.read().decode() if isinstance(error, urllib.error.HTTPError) else error
        pytest.fail(f"{place}: `{shlex.join(argv)}` was refused: {detail}")
    request = json.loads(body)
    if "instances" in request:
        assert len(reply["predictions"]) == len(request["instances"]), reply
    else:
        assert reply["outputs"], reply


@pytest.mark.subprocess
@each_command("script", where=lambda argv: argv[1] == "examples/serving_clients.py")
def test_readme_serving_client_line_gets_the_same_answer_over_rest_and_grpc(place, argv, serving_ports, child_env):
    grpc_port, rest_port = serving_ports
    result = subprocess.run([sys.executable, *argv[1:], "--grpc_address", f"localhost:{grpc_port}",
                             "--rest_address", f"localhost:{rest_port}"], cwd=ROOT, env=child_env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0 and "REST and gRPC agree." in result.stdout, \
        f"{place}: `{shlex.join(argv)}` failed:\n{result.stderr[-3000:]}"


@each_command("docker")
def test_readme_docker_line_serves_an_export_the_readme_writes_on_the_curl_lines_port(place, argv):
    parser = argparse.ArgumentParser(prog="docker run", add_help=False)
    for option in ("-p", "-v", "-e"):
        parser.add_argument(option, action="append", default=[])
    parser.add_argument("image")
    args = _parse(parser, place, argv, argv[2:])
    assert args.image == "tensorflow/serving", f"{place}: not the TF Serving image: {args.image}"
    model_base = f"{SERVING_MODEL_BASE}/{dict(variable.split('=', 1) for variable in args.e).get('MODEL_NAME')}"
    mounts = {target: source for source, target in (volume.rsplit(":", 1) for volume in args.v)}
    exports = {"$PWD/" + directory for directory in cli_exports().values()}
    assert mounts.get(model_base) in exports, \
        f"{place}: the server reads {model_base}, mounted from {mounts.get(model_base)}; " \
        f"the README exports to {sorted(exports)}"
    ports = {int(container): int(host) for host, container in (port.split(":") for port in args.p)}
    assert {SERVING_GRPC_PORT, SERVING_REST_PORT} <= set(ports), f"{place}: publish gRPC and REST: {args.p}"
    for curl_place, curl in commands_of("curl"):
        assert _curl_request(curl_place, curl)[0].port == ports[SERVING_REST_PORT], \
            f"{curl_place}: the curl line misses the REST port {place} publishes"
