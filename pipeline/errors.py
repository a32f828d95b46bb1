"""Errors a user can act on. The CLI prints these as one clear message, not a traceback."""


class AttnbenchError(Exception):
    """Base class for errors whose message is meant for the user."""


class SpecError(AttnbenchError):
    """A suite file is malformed or names something that does not exist."""


class DataError(AttnbenchError):
    """A dataset cannot be loaded, or is unusable for the task it claims."""


class StoreError(AttnbenchError):
    """The results database cannot be opened or is not ours."""


class ClusterLost(AttnbenchError):
    """The Ray cluster a run was using went away under it (``ray stop``, its head node lost): the run
    ends at once; what was committed stays, and the same command resumes it."""
