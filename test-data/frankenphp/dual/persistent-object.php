<?php
// An object and a class made before the first request, used by every request
// (TestPersistentObject): in a worker the same object (same id) every time.
require_once __DIR__ . '/_serve.php';

final class Kept
{
    public function __construct(public string $name) {}
}
$kept = new Kept('first');

serve(static function () use ($kept): void {
    echo json_encode([
        'i' => $_GET['i'] ?? null,
        'class' => class_exists(Kept::class),
        'name' => $kept->name,
        'object_id' => spl_object_id($kept),
    ]);
});
