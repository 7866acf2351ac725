from django.apps import AppConfig


class PollsConfig(AppConfig):
    name = "polls"

    def ready(self):
        from core import versions
        from polls.models import Poll

        # Not on deletion: a poll's row goes after its soft delete (which bumps), or with its
        # space, whose deletion bumps the space's token, which every cached read of its keys
        # names; a space's cascade need not load its polls.
        versions.bump_on_save(Poll, lambda poll: (versions.poll(poll.pk),), deletes=False)
