"""The installed desktop app: `cmake --install BUILD --prefix PREFIX` into a temporary prefix, then the
installed programs run from there, without the build folder: the CLI on the installed demo model and
photos gives the build tree's numbers bit for bit, the window writes its screenshot of the bundled
demo, the menu entry, icon, MIME types and man pages are where a desktop looks for them, and the
binaries' run paths name no build folder."""

import os
import pathlib
import shutil
import subprocess
import tempfile
import unittest

import torch

BUILD = pathlib.Path(os.environ["TORCHSCOPE_BUILD_DIR"])
CLI = os.environ["TORCHSCOPE_CLI"]
SOURCE = pathlib.Path(__file__).resolve().parents[2]
TIMEOUT = 600


class InstalledApp(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.prefix = pathlib.Path(cls.tmp.name) / "prefix"
        done = subprocess.run(["cmake", "--install", str(BUILD), "--prefix", str(cls.prefix)], capture_output=True,
                              text=True, timeout=TIMEOUT)
        assert done.returncode == 0, done.stdout + done.stderr

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_the_desktop_finds_the_entry_icon_mime_types_and_man_pages(self):
        share = self.prefix / "share"
        for path in ("applications/torchscope.desktop", "icons/hicolor/scalable/apps/torchscope.svg",
                     "mime/packages/torchscope.xml", "man/man1/torchscope-cli.1", "man/man1/torchscope.1",
                     "torchscope/face/face_expression.pt", "torchscope/demo/fashion_cnn.pt"):
            with self.subTest(path=path):
                self.assertTrue((share / path).is_file(), path)
        entry = (share / "applications/torchscope.desktop").read_text()
        self.assertIn("Exec=torchscope %f", entry)
        self.assertIn("application/x-torch-export-program", entry)
        mime = (share / "mime/packages/torchscope.xml").read_text()
        self.assertIn('<glob pattern="*.pt2"/>', mime)
        self.assertIn('<glob pattern="*.pt" weight="40"/>', mime)
        validate = shutil.which("desktop-file-validate")
        if validate or os.environ.get("CI") == "true":
            self.assertIsNotNone(validate, "desktop-file-validate is missing (scripts/install-deps.sh installs it)")
            done = subprocess.run([validate, str(share / "applications/torchscope.desktop")], capture_output=True,
                                  text=True)
            self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        page = (share / "man/man1/torchscope-cli.1").read_text()
        self.assertIn(".SH SYNOPSIS", page)
        self.assertIn("attribute", page)  # the commands, from --help

    def test_the_binaries_name_no_build_folder(self):
        for program in ("torchscope-cli", "torchscope"):
            with self.subTest(program=program):
                dynamic = subprocess.run(["readelf", "-d", str(self.prefix / "bin" / program)], capture_output=True,
                                         text=True, check=True).stdout
                paths = [line for line in dynamic.splitlines() if "RUNPATH" in line or "RPATH" in line]
                self.assertTrue(paths, dynamic)
                for line in paths:
                    self.assertNotIn(str(BUILD), line)
                    self.assertIn("torch/lib", line)

    def test_the_installed_cli_runs_the_installed_demo_as_the_build_does(self):
        face = self.prefix / "share/torchscope/face"
        outputs = {}
        for name, program in (("installed", str(self.prefix / "bin/torchscope-cli")), ("build", CLI)):
            out = pathlib.Path(self.tmp.name) / f"{name}.pt"
            done = subprocess.run([program, "run", str(face / "face_expression.pt"), "--input", str(face / "photos"),
                                   "--grab", "features.dense2", "--out", str(out), "--device", "cpu", "--threads", "2"],
                                  capture_output=True, text=True, timeout=TIMEOUT, cwd=self.tmp.name)
            self.assertEqual(done.returncode, 0, done.stderr)
            outputs[name] = torch.load(out)
        for key in ("output", "features.dense2"):
            self.assertTrue(torch.equal(outputs["installed"][key], outputs["build"][key]), key)

    def test_the_installed_window_opens_the_bundled_demo(self):
        shot = pathlib.Path(self.tmp.name) / "shot.png"
        env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
        done = subprocess.run([str(self.prefix / "bin/torchscope"), "--screenshot", str(shot)], capture_output=True,
                              text=True, timeout=TIMEOUT, env=env, cwd=self.tmp.name)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertGreater(shot.stat().st_size, 10000)


if __name__ == "__main__":
    unittest.main()
