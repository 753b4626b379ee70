"""A tiny request loop used to record regbot's example profiles with py-spy."""
import json
import time


def parse_request(payload):
    return json.loads(payload)


def render(items):
    return "".join(f"<li>{i}</li>" for i in items)


def handle(payload):
    data = parse_request(payload)
    total = sum(x * x for x in range(data["n"]))
    return render(range(data["n"] // 50)) + str(total)


def serve(seconds):
    end = time.time() + seconds
    while time.time() < end:
        handle('{"n": 30000}')
        time.sleep(0.0005)


serve(4)
