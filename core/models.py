"""The service-wide state every app may read."""

from django.db import models


class ServiceSwitch(models.Model):
    """Service-wide switches flipped at run time (maintenance mode)."""

    MAINTENANCE = "maintenance"

    name = models.CharField(primary_key=True, max_length=50)
    is_on = models.BooleanField(default=False)
    changed_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "spaces_serviceswitch"  # made by the spaces app before core existed

    def __str__(self):
        return f"{self.name}: {'on' if self.is_on else 'off'}"

    @classmethod
    def enabled(cls, name: str) -> bool:
        return cls.objects.filter(name=name, is_on=True).exists()

    @classmethod
    def set(cls, name: str, on: bool) -> None:
        cls.objects.update_or_create(name=name, defaults={"is_on": on})
