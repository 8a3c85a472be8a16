def find_task(visible):
    return None
