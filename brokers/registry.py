"""Protocol name -> agent class."""
from __future__ import annotations

from brokers.averaging import AveragingAgent
from brokers.base import Agent, LocalAgent
from brokers.directcontr_agent import DirectContrAgent
from brokers.divisible import AveragingGameAgent, BilbAgent
from brokers.fairshare_agent import FairshareAgent
from brokers.gm_agent import GmAgent
from brokers.molba_agent import MolbaAgent
from brokers.random_broker import RandomBrokerAgent

AGENTS: dict[str, type[Agent]] = {cls.name: cls for cls in (LocalAgent, RandomBrokerAgent, AveragingAgent, AveragingGameAgent, BilbAgent, MolbaAgent, GmAgent, FairshareAgent, DirectContrAgent)}
