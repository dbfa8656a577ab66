"""The deliberation engine: personas, protocols, phases, prompts, schemas, the ledger."""
