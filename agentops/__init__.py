"""agentops: a Django dashboard and the framework-free durable-turn runtime behind it."""
