# A regression trained with hand-made mini-batches: a permutation indexes the rows, SGD
# with Nesterov momentum and weight decay, ReduceLROnPlateau on the validation loss,
# early stopping that keeps the best weights with copy.deepcopy and restores them.
import copy

import torch
import torch.nn as nn


def build():
    return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1))


def train(model, data, steps):
    x, t = torch.from_numpy(data["x"]), torch.from_numpy(data["t"]).unsqueeze(1)
    x_tr, t_tr, x_va, t_va = x[:18], t[:18], x[18:], t[18:]
    perms = torch.from_numpy(data["perm"])  # one permutation of the 18 rows per epoch
    assert torch.equal(torch.randperm(18).sort().values, torch.arange(18))
    opt = torch.optim.SGD(
        model.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-3
    )
    sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="min", factor=0.5, patience=1)
    criterion = nn.MSELoss()
    best_loss, best_state, bad_epochs, losses = float("inf"), None, 0, []
    for epoch in range(steps):
        model.train()
        perm = perms[epoch % len(perms)]
        for start in range(0, 18, 6):
            idx = perm[start : start + 6]
            opt.zero_grad()
            loss = criterion(model(x_tr[idx]), t_tr[idx])
            loss.backward()
            opt.step()
            losses.append(loss.item())
        model.eval()
        with torch.no_grad():
            val = criterion(model(x_va), t_va).item()
        sched.step(val)
        losses += [val, opt.param_groups[0]["lr"]]
        if val < best_loss - 1e-4:
            best_loss, bad_epochs = val, 0
            best_state = copy.deepcopy(model.state_dict())
        else:
            bad_epochs += 1
            if bad_epochs >= 3:
                break
    model.load_state_dict(best_state)
    with torch.no_grad():
        losses.append(criterion(model(x_va), t_va).item())
    return losses
