# Knowledge distillation: a teacher with Dropout(0.3) and BatchNorm kept in eval mode
# and frozen with requires_grad_(False), logits under torch.no_grad(), a student trained
# on soft targets (F.kl_div of temperature-scaled log_softmax against softmax, times
# T * T, batchmean) mixed with hard-label cross-entropy, the student's logits for
# several heads in an nn.ModuleDict, and agreement measured with argmax.
import torch
import torch.nn as nn
import torch.nn.functional as F


class Teacher(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(6, 24), nn.BatchNorm1d(24), nn.ReLU(), nn.Dropout(0.3), nn.Linear(24, 3)
        )

    def forward(self, x):
        return self.net(x)


class Student(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(6, 8)
        self.heads = nn.ModuleDict({"main": nn.Linear(8, 3), "aux": nn.Linear(8, 3)})

    def forward(self, x):
        h = F.relu(self.body(x))
        return {name: head(h) for name, head in self.heads.items()}


class Pair(nn.Module):
    def __init__(self):
        super().__init__()
        self.teacher = Teacher()
        self.student = Student()


def build():
    return Pair()


def distillation_loss(student_logits, teacher_logits, labels, T=2.0, alpha=0.7):
    soft = F.kl_div(
        F.log_softmax(student_logits / T, dim=1),
        F.softmax(teacher_logits / T, dim=1),
        reduction="batchmean",
    ) * (T * T)
    return alpha * soft + (1 - alpha) * F.cross_entropy(student_logits, labels)


def train(model, data, steps):
    x, y = torch.from_numpy(data["x"]), torch.from_numpy(data["y"])
    teacher, student = model.teacher, model.student
    # a quick supervised pass for the teacher first (eval-mode dropout: deterministic)
    t_opt = torch.optim.SGD(teacher.parameters(), lr=0.1)
    teacher.train()
    teacher.net[3].eval()
    losses = []
    for _ in range(2):
        loss = F.cross_entropy(teacher(x), y)
        t_opt.zero_grad()
        loss.backward()
        t_opt.step()
        losses.append(loss.item())
    teacher.eval()
    teacher.requires_grad_(False)
    opt = torch.optim.Adam(student.parameters(), lr=1e-2)
    for step in range(steps):
        xb, yb = x[(step % 3) * 8 : (step % 3) * 8 + 8], y[(step % 3) * 8 : (step % 3) * 8 + 8]
        with torch.no_grad():
            t_logits = teacher(xb)
        out = student(xb)
        loss = distillation_loss(out["main"], t_logits, yb) + 0.3 * F.cross_entropy(out["aux"], yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        agree = (out["main"].argmax(1) == t_logits.argmax(1)).float().mean()
        losses += [loss.item(), agree.item()]
    losses.append(float(all(p.grad is None for p in teacher.parameters())))
    losses.append(teacher.net[1].running_mean.abs().sum().item())
    return losses
