"""gzip for the API's reads, for clients that send `Accept-Encoding: gzip`."""

from django.middleware.gzip import GZipMiddleware


class GzipApiReads(GZipMiddleware):
    """Compresses `GET /v1/...` answers of 200 bytes or more (Django's GZipMiddleware: `Vary:
    Accept-Encoding`, a weak ETag) and nothing else. The answers that carry a secret (a webhook
    endpoint's creation and rotation, and replays of them) are POSTs, and the back office's
    pages carry CSRF tokens and key material: compressing a secret beside text an attacker can
    influence leaks it through the compressed length (BREACH), so those are never compressed."""

    def process_response(self, request, response):
        if request.method != "GET" or not request.path.startswith("/v1/"):
            return response
        return super().process_response(request, response)
