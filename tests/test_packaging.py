"""The package as an application installs it: one wheel, one top-level name, no clash with the application's own
``storage`` and ``protocol`` packages, and the pytest fixtures working from the application's directory."""

from __future__ import annotations

import site
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests.test_plugin import USER_TESTS

REPO = Path(__file__).resolve().parents[1]
SOURCE_FOLDERS = {"minibroker": "minibroker", "protocol": "minibroker/protocol", "storage": "minibroker/storage"}
APPLICATION_TEST = '''
import protocol
import storage


def test_application_packages_are_its_own():
    assert protocol.OWNER == storage.OWNER == "application"
'''


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(REPO)],
                   check=True, capture_output=True, timeout=300)
    return next(out.glob("minibroker-*.whl"))


def test_wheel_installs_only_the_minibroker_name(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names if ".dist-info/" not in name}
    assert tops == {"minibroker"}
    expected = {
        f"{installed}/{path.relative_to(REPO / folder).as_posix()}"
        for folder, installed in SOURCE_FOLDERS.items()
        for path in (REPO / folder).rglob("*.py")
    }
    assert expected - set(names) == set(), "source files missing from the wheel"


def test_wheel_holds_the_inspector_assets(wheel: Path) -> None:
    """The web inspector's page, scripts and styles are package data: without them the page would not load."""
    names = set(zipfile.ZipFile(wheel).namelist())
    assets = {f"minibroker/inspector/{p.name}" for p in (REPO / "minibroker" / "inspector").iterdir() if p.is_file()}
    assert {"minibroker/inspector/index.html", "minibroker/inspector/app.js"} <= assets
    assert assets - names == set(), "inspector assets missing from the wheel"


def test_fixtures_work_beside_an_application_with_its_own_storage_and_protocol(wheel: Path, tmp_path: Path) -> None:
    """A fresh venv holding the wheel (its dependencies and pytest come from this environment, after it), run from
    an application directory whose own ``storage`` and ``protocol`` packages must win for the application."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", str(wheel)],
                   check=True, capture_output=True, timeout=300)
    venv_site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                    check=True, capture_output=True, text=True).stdout.strip())
    # This environment's packages (crc32c, confluent-kafka, pytest, ...) after the venv's own, by path only: the
    # editable install of this checkout is a .pth hook there, which a plain path entry does not run.
    outer = dict.fromkeys([sysconfig.get_paths()["purelib"], *site.getsitepackages()])
    (venv_site / "zz_outer_environment.pth").write_text("\n".join(outer) + "\n")

    app = tmp_path / "app"
    for package in ("storage", "protocol"):
        (app / package).mkdir(parents=True)
        (app / package / "__init__.py").write_text('OWNER = "application"\n')
    (app / "test_user.py").write_text(USER_TESTS)
    (app / "test_application.py").write_text(APPLICATION_TEST)
    where = subprocess.run([str(python), "-c", "import minibroker.storage; print(minibroker.storage.__file__)"],
                           cwd=app, check=True, capture_output=True, text=True).stdout
    assert where.startswith(str(venv_site)), where
    result = subprocess.run(
        [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:asyncio"],
        cwd=app, capture_output=True, text=True, timeout=180,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 passed" in result.stdout, result.stdout
