"""The stop of a failed upload on a ``distributed`` cluster, as a worker plugin: the
scheduler gives it to every worker, and to every worker that joins later before that
worker runs a task, so that no worker sends a request of the upload once it is
stopped, nor runs the failed write again (see ``_dask._Uploads``). The scheduler
keeps it (a few bytes per failed upload). Imported only with ``distributed``."""

from distributed.diagnostics.plugin import WorkerPlugin

from . import _dask


class StopUpload(WorkerPlugin):
    """Stops the upload's gate on the worker it is set up on."""

    def __init__(self, gate):
        self.gate = gate
        self.name = f"rastore-stop-{gate}"

    def setup(self, worker):
        _dask._Uploads.stop(self.gate, timeout=0)
