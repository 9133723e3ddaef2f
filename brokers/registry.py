"""Protocol name -> agent class."""
from __future__ import annotations

from gridemu.brokers.agents.averaging import AveragingAgent
from gridemu.brokers.agents.base import Agent, LocalAgent
from gridemu.brokers.agents.directcontr import DirectContrAgent
from gridemu.brokers.agents.divisible import AveragingGameAgent, BilbAgent
from gridemu.brokers.agents.fairshare import FairshareAgent
from gridemu.brokers.agents.gm import GmAgent
from gridemu.brokers.agents.molba import MolbaAgent
from gridemu.brokers.agents.random import RandomBrokerAgent

AGENTS: dict[str, type[Agent]] = {cls.name: cls for cls in (LocalAgent, RandomBrokerAgent, AveragingAgent, AveragingGameAgent, BilbAgent, MolbaAgent, GmAgent, FairshareAgent, DirectContrAgent)}
