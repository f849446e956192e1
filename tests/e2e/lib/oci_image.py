# SPDX-License-Identifier: Apache-2.0
"""The gpusched OCI image that ``make image`` (scripts/build-image) writes, read and run by tests.

``image_archive() -> str``
    The archive: ``GPUSCHED_IMAGE`` (ctest sets it) or build/image/gpusched.oci.tar. Raises when
    it does not exist: the checks that need it are not optional.
``OciArchive(path)``
    Parsed with the standard library: ``ref`` (the org.opencontainers.image.ref.name
    annotation), ``manifest``, ``config`` (the image config: Entrypoint, Cmd, User, Labels ...),
    ``layers`` (``[tarfile.TarInfo]`` per layer), ``size`` (bytes of the archive),
    ``files()`` (path -> TarInfo) and ``read(path) -> bytes``.
``Buildah(workdir)``
    Debian's buildah on private vfs storage under ``workdir`` (nothing left in
    /var/lib/containers): ``from_archive(path) -> container``, ``run(container, argv,
    volumes={host: (path, "ro")}, env={}, user=None)`` (chroot isolation, as the image's user
    unless ``user`` is given) returning a ``subprocess.CompletedProcess``; ``run_command(...)``,
    the same arguments, gives the command line instead (to start a long-running process);
    ``cleanup()``. Output is read through files: buildah drops what overflows a pipe.
"""

import gzip
import io
import json
import os
import shutil
import subprocess
import tarfile
import tempfile

from cluster import source_dir


def image_archive():
    path = os.environ.get("GPUSCHED_IMAGE") or os.path.join(
        source_dir(), "build", "image", "gpusched.oci.tar")
    if not os.path.isfile(path):
        raise RuntimeError(f"no image archive at {path}: run `make image` (scripts/build-image)")
    return path


class OciArchive:
    def __init__(self, path):
        self.path = path
        self.size = os.path.getsize(path)
        with tarfile.open(path) as tar:
            index = json.load(tar.extractfile("index.json"))
            [entry] = index["manifests"]
            self.ref = entry.get("annotations", {}).get("org.opencontainers.image.ref.name")
            self.manifest = json.load(tar.extractfile(self._blob(entry["digest"])))
            self.config = json.load(tar.extractfile(self._blob(self.manifest["config"]["digest"])))
            self.layers = []
            self._layer_data = []
            for layer in self.manifest["layers"]:
                data = tar.extractfile(self._blob(layer["digest"])).read()
                if layer["mediaType"].endswith("+gzip") or data[:2] == b"\x1f\x8b":
                    data = gzip.decompress(data)
                self._layer_data.append(data)
                with tarfile.open(fileobj=io.BytesIO(data)) as layer_tar:
                    self.layers.append(layer_tar.getmembers())

    @staticmethod
    def _blob(digest):
        algo, hexd = digest.split(":", 1)
        return f"blobs/{algo}/{hexd}"

    def read(self, path):
        """The content of file `path` (no leading '/') in the topmost layer that has it."""
        for data in reversed(self._layer_data):
            with tarfile.open(fileobj=io.BytesIO(data)) as layer_tar:
                for m in layer_tar.getmembers():
                    if m.isfile() and m.name.lstrip("./").lstrip("/") == path:
                        return layer_tar.extractfile(m).read()
        raise KeyError(f"{path} is not in the image")

    def files(self):
        """{path without leading './' or '/': TarInfo} over every layer."""
        out = {}
        for members in self.layers:
            for m in members:
                out[m.name.lstrip("./").lstrip("/")] = m
        return out


class Buildah:
    def __init__(self, workdir):
        self.binary = shutil.which("buildah")
        if not self.binary:
            raise RuntimeError("buildah not found (scripts/bootstrap installs it)")
        self.root = os.path.join(workdir, "buildah-root")
        self.runroot = os.path.join(workdir, "buildah-run")

    def _cmd(self, *args):
        return [self.binary, "--root", self.root, "--runroot", self.runroot,
                "--storage-driver", "vfs", *args]

    def call(self, *args):
        proc = subprocess.run(self._cmd(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"buildah {' '.join(args)}: rc {proc.returncode}\n{proc.stderr}")
        return proc.stdout.strip()

    def from_archive(self, path):
        return self.call("from", "--quiet", f"oci-archive:{path}")

    def run_command(self, container, argv, volumes=None, env=None, user=None):
        args = ["run", "--isolation", "chroot"]
        for host, (path, mode) in (volumes or {}).items():
            args += ["--volume", f"{host}:{path}:{mode}"]
        for k, v in (env or {}).items():
            args += ["--env", f"{k}={v}"]
        if user:
            args += ["--user", user]
        return self._cmd(*args, container, "--", *argv)

    def run(self, container, argv, volumes=None, env=None, user=None, timeout=120):
        # Output goes through files, not pipes: buildah 1.28 (chroot isolation) drops what the
        # process writes once a pipe to its reader is full (64 KiB) and still exits 0, so a
        # reader slowed by a loaded machine got a truncated report.
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            proc = subprocess.run(self.run_command(container, argv, volumes, env, user),
                                  stdout=out, stderr=err, timeout=timeout)
            out.seek(0)
            err.seek(0)
            return subprocess.CompletedProcess(proc.args, proc.returncode,
                                               out.read().decode(), err.read().decode())

    def cleanup(self):
        subprocess.run(self._cmd("rm", "--all"), stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        shutil.rmtree(self.root, ignore_errors=True)
        shutil.rmtree(self.runroot, ignore_errors=True)
