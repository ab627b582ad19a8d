"""Sessions, turns and events: Django models, the session service, importers and pages."""
