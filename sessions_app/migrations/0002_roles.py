"""Create the two dashboard roles (groups) with their permissions."""

from __future__ import annotations

from django.contrib.auth.management import create_permissions
from django.db import migrations

OPERATORS = "operators"
ADMINS = "admins"
# Frozen copies of sessions_app.roles at the time of this migration.
OPERATOR_PERMISSIONS = [
    "sessions_app.view_session",
    "sessions_app.view_turn",
    "sessions_app.view_event",
    "todos_app.view_todolist",
    "todos_app.view_todoitem",
]
ADMIN_PERMISSIONS = [
    *OPERATOR_PERMISSIONS,
    "sessions_app.record_tool_outcome",
    "todos_app.change_todolist",
    "todos_app.add_todoitem",
    "todos_app.change_todoitem",
    "todos_app.delete_todoitem",
]


def create_roles(apps, schema_editor):
    # Permissions are normally created after all migrations; make them now.
    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for name, perms in ((OPERATORS, OPERATOR_PERMISSIONS), (ADMINS, ADMIN_PERMISSIONS)):
        group, _ = Group.objects.get_or_create(name=name)
        for dotted in perms:
            app_label, codename = dotted.split(".")
            group.permissions.add(
                Permission.objects.get(content_type__app_label=app_label, codename=codename)
            )


def remove_roles(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name__in=[OPERATORS, ADMINS]).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0001_initial"),
        ("todos_app", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(create_roles, remove_roles)]
