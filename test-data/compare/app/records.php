<?php
// 100 records for the JSON API workload.
function records(): array
{
    $out = [];
    for ($i = 1; $i <= 100; $i++) {
        $out[] = ['id' => $i, 'name' => "Record $i", 'email' => "user$i@example.com",
            'active' => $i % 3 !== 0, 'score' => $i * 1.5, 'tags' => ['a', 'b', (string) $i]];
    }
    return $out;
}
