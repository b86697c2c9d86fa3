<!doctype html>
<html><head><title>Framework page</title></head>
<body>
<table>
<?php foreach ($rows as $row): ?>
  <tr><td><?= htmlspecialchars($row['service']) ?></td><td><?= (int) $row['id'] ?></td><td><?= htmlspecialchars($row['label']) ?></td></tr>
<?php endforeach; ?>
</table>
</body></html>
