"""pylops_mpi.proximal.ProxOperator: MPIProxOperator."""
from ._prox import MPIProxOperator

__all__ = ["MPIProxOperator"]
